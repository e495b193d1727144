package io.kvferry.internal;

import java.time.Duration;
import java.util.function.BiConsumer;

import io.kvferry.FailureCause;
import io.kvferry.TopologyException;
import io.kvferry.internal.stripe.StripedConnection;
import io.kvferry.spi.CloseReason;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.SendGate;
import io.kvferry.spi.SendListener;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One decode rank, as the prefill rank sees it: its handshake, the rooms it asks for, their refusals and its aborts.
 * Its messages come in order on one connection's thread; the rooms it asked for fail when its connection is lost. What
 * the rooms need of the rank is its {@link PrefillPeer}; what they need of the manager, the {@link PrefillSupport}.
 */
final class PrefillSession implements StripedConnection.Handler {

	private static final Logger log = LoggerFactory.getLogger(PrefillSession.class);
	// Ends the reason of a room decode refused as overloaded.
	private static final String TOLD_BY_DECODE = " (told by decode ";

	private final PrefillSupport support;
	private final RoomTable<PrefillTransfer> table;
	final PrefillPeer peer;
	private final StripedConnection connection;
	// Told once every connection of the rank closed, with what it is counted lost to.
	private final BiConsumer<PrefillSession, CloseReason> closed;

	/** @param closed told once every connection of the rank closed, with what it is counted lost to */
	PrefillSession(PrefillSupport support, RoomTable<PrefillTransfer> table, StripedConnection connection,
			BiConsumer<PrefillSession, CloseReason> closed) {
		this.support = support;
		this.table = table;
		this.connection = connection;
		this.peer = new PrefillPeer(connection, support.leaseTicks(), support.uniqueRank);
		this.closed = closed;
	}

	@Override
	public void onMessage(KVMessage message) {
		if (message instanceof KVMessage.Hello hello) {
			onHello(hello);
		}
		else if (peer.plan == null) {
			connection.close("decode sent " + message.getClass().getSimpleName() + " before the handshake");
		}
		else if (message instanceof KVMessage.TransferRequest req) {
			if (!connection.isComplete()) {
				connection.close("decode sent a transfer request before its " + connection.width() + " stripes joined");
				return;
			}
			try {
				onTransferRequest(req);
			}
			catch (RuntimeException e) {
				// A request this rank cannot serve fails its room, not the connection the other rooms share.
				PrefillTransfer r = table.get(req.room());
				String why = "bad transfer request for room " + req.room() + " from decode "
						+ connection.remoteAddress() + ": " + Failures.describe(e);
				log.warn("[{}] {}", support.name, why, e);
				if (r != null) {
					r.fail(FailureCause.PROTOCOL, why);
				}
			}
		}
		else if (message instanceof KVMessage.Renew renew) {
			peer.leases.renew(renew.rooms());
		}
		else if (message instanceof KVMessage.Abort abort) {
			onAbort(abort);
		}
		else if (message instanceof KVMessage.Layout layout) {
			onLayout(layout);
		}
		else {
			connection.close("unexpected " + message.getClass().getSimpleName() + " from decode");
		}
	}

	private void onHello(KVMessage.Hello hello) {
		if (peer.plan != null) {
			connection.close("second handshake from decode");
			return;
		}
		String reason = null;
		if (hello.protocolVersion() != KVMessage.PROTOCOL_VERSION) {
			reason = "protocol version mismatch: prefill " + KVMessage.PROTOCOL_VERSION + ", decode "
					+ hello.protocolVersion();
		}
		else if (StripedConnection.refusesWidth(hello.stripes()) != null) {
			reason = StripedConnection.refusesWidth(hello.stripes());
		}
		else {
			// Two ranks of different models are refused before the planner looks at how their buffers pair.
			reason = ModelFingerprint.mismatch(ModelFingerprint.of(support.ownLayout),
					ModelFingerprint.of(hello.layout()));
		}
		TransferPlan plan = null;
		if (reason == null) {
			try {
				plan = TransferPlan.of(support.config.kvArgs(), support.config.layout(), hello.layout(),
						support.config.dsaCacheLayerSplit());
			}
			catch (TopologyException e) {
				reason = e.getMessage();
			}
		}
		if (reason != null) {
			String why = "prefill rank " + support.name + " rejected decode " + connection.remoteAddress() + ": "
					+ reason;
			log.warn("[{}] {}", support.name, why);
			connection.send(new KVMessage.Reject(why), SendGate.OPEN, SendListener.either(() -> connection.close(why)));
			return;
		}
		long token = connection.expect(hello.stripes(), hello.checksums());
		log.debug("[{}] decode {} (incarnation {}) registered over {} connections: {}", support.name,
				connection.remoteAddress(), Incarnation.text(hello.incarnation()), hello.stripes(), plan);
		peer.decodeIncarnation = hello.incarnation();
		peer.plan = plan;
		connection.send(new KVMessage.HelloAck(support.ownLayout, token, support.incarnation,
				support.config.leasePeriod().toMillis()));
		String draining = table.drainReason();
		if (draining != null) {
			connection.send(new KVMessage.Draining(draining));
		}
	}

	/**
	 * The decode rank re-registered its regions: every request after this message is planned against the new layout
	 * (stripe 0 carries both in order). A layout of another model, a generation that does not move forward or regions
	 * this rank's cannot pair with close the connection, naming the problem: the rank's requests would be planned
	 * against regions it no longer has.
	 */
	private void onLayout(KVMessage.Layout layout) {
		String from = "decode " + connection.remoteAddress();
		String reason = null;
		TransferPlan plan = null;
		if (layout.generation() <= peer.layoutGeneration) {
			reason = from + " sent layout generation " + layout.generation() + " after " + peer.layoutGeneration
					+ " (expected: a larger one)";
		}
		else {
			String model = ModelFingerprint.mismatch(ModelFingerprint.of(support.ownLayout),
					ModelFingerprint.of(layout.layout()));
			if (model != null) {
				reason = from + " re-registered regions of another model: " + model;
			}
			else {
				try {
					plan = TransferPlan.of(support.config.kvArgs(), support.config.layout(), layout.layout(),
							support.config.dsaCacheLayerSplit());
				}
				catch (TopologyException e) {
					reason = from + " re-registered regions this rank cannot pair with: " + e.getMessage();
				}
			}
		}
		if (reason != null) {
			log.warn("[{}] {}", support.name, reason);
			connection.close(reason);
			return;
		}
		peer.layoutGeneration = layout.generation();
		peer.plan = plan;
		log.info("[{}] {} re-registered its regions (generation {}): {}", support.name, from, layout.generation(),
				plan);
	}

	private void onTransferRequest(KVMessage.TransferRequest req) {
		String weakPath = PathCheck.refusal(req.room(), support.config.requiredPath(), peer.path(),
				"decode rank " + connection.remoteAddress());
		if (weakPath != null) {
			refusePath(req.room(), weakPath);
			return;
		}
		if (table.get(req.room()) == null && !table.isTombstoned(req.room())) {
			String over = support.unclaimed.refuses(peer.unclaimed, UnclaimedRooms.bytesOf(req));
			if (over != null) {
				Duration hint = support.retryAfter.hint();
				RoomTable.Ended refused = new RoomTable.Ended(FailureCause.OVERLOAD, Overload.reason(hint, "room "
						+ req.room() + " refused: " + over), false, hint);
				// Refused before the room exists: the engine's sender(room) is then born failed, overloaded, with the
				// reason and its hint.
				if (table.endBeforeKnown(req.room(), refused) == null) {
					peer.refuse(req.room(), refused);
					return;
				}
			}
		}
		PrefillTransfer r = table.getOrCreate(req.room(), id -> new PrefillTransfer(support, table, id));
		if (r == null) {
			String draining = table.drainReason();
			if (draining != null && !table.isTombstoned(req.room())) {
				// The notice may not have gone out on this connection yet: decode must read it before the refusal.
				connection.send(new KVMessage.Draining(draining));
				peer.refuse(req.room(), new RoomTable.Ended(FailureCause.DRAINING, draining, false));
				return;
			}
			// The room ended here before this request (its peers gave up, a lease expired): the request gets why.
			RoomTable.Ended early = table.endedBeforeKnown(req.room());
			String ended = "room " + req.room() + " already ended on prefill rank " + support.name;
			if (req.claim().isRetarget()) {
				// A replacement comes too late: the room's pages are gone, and its engine recomputes the request.
				peer.refuse(req.room(), new RoomTable.Ended(FailureCause.LEASE_EXPIRED, ended + (early == null ? ""
						: " (" + early.cause() + ": " + early.reason() + ")")
						+ "; its pages are no longer held, so the replacement recomputes it", false));
				return;
			}
			peer.refuse(req.room(), early == null ? new RoomTable.Ended(FailureCause.OTHER, ended, false)
					: new RoomTable.Ended(early.cause(), ended + ": " + early.reason(), false, early.retryAfter()));
			return;
		}
		r.admit(peer, req);
	}

	/**
	 * This decode rank's connection does not meet the path the rank requires: the room fails here and no byte of it
	 * goes that way. A room the engine has not claimed yet ends before it is known, so that its sender is born failed.
	 */
	private void refusePath(long room, String why) {
		PrefillTransfer r = table.get(room);
		if (r == null && !table.isTombstoned(room)) {
			r = table.endBeforeKnown(room, new RoomTable.Ended(FailureCause.INCOMPATIBLE, why, false));
			if (r == null) {
				log.info("[{}] room {} refused before its sender: {}", support.name, room, why);
			}
		}
		if (r != null) {
			// The room's path is the one it was refused for, not unknown.
			r.clock.refused(peer.path());
			r.fail(FailureCause.INCOMPATIBLE, why);
		}
		peer.refuse(room, new RoomTable.Ended(FailureCause.INCOMPATIBLE, why, false));
	}

	private void onAbort(KVMessage.Abort abort) {
		// Decode turned the room away over its own bound: the room fails here as overloaded too, with decode's hint.
		// Any other abort is decode giving up, whatever its own reason.
		boolean overloaded = abort.cause() == FailureCause.OVERLOAD;
		String reason = overloaded ? abort.reason() + TOLD_BY_DECODE + connection.remoteAddress() + ")"
				: "Aborted by decode " + connection.remoteAddress() + ": " + abort.reason();
		RoomTable.Ended how = overloaded ? new RoomTable.Ended(FailureCause.OVERLOAD, reason, true,
				Duration.ofMillis(abort.retryAfterMillis())) : new RoomTable.Ended(FailureCause.ABORTED, reason, true);
		PrefillTransfer r = table.get(abort.room());
		if (r != null && r.askedByOthers(peer)) {
			// Another decode rank's room: this one cannot end it. Its abort is still answered, so it waits for nothing.
			log.debug("[{}] decode {} aborted room {}, which other decode ranks asked for: ignored", support.name,
					connection.remoteAddress(), abort.room());
		}
		else {
			if (r == null) {
				r = table.endBeforeKnown(abort.room(), how);
			}
			if (r != null) {
				r.abortedBy(peer, how);
			}
		}
		// Everything queued for the room before this point is now dropped by its gate; the ack goes after it, on every
		// connection that may have carried the room's bytes.
		connection.broadcast(new KVMessage.AbortAck(abort.room()), null);
	}

	/** Fails the rooms that lost their decode and that no replacement claimed within their lease. */
	static void expireOrphans(PrefillSupport support) {
		for (RoomLeases.Lease<Room> l : support.orphans.expire()) {
			l.holder.fail(FailureCause.LEASE_EXPIRED, RoomLeases.expired(l.room, "its decode rank went, and no "
					+ "replacement decode claimed the room within the lease (" + support.config.leasePeriod().toMillis()
					+ " ms since the last renewal)"));
		}
	}

	/** Fails the rooms whose lease this decode rank let run out; on the manager's lease timer. */
	void expireLeases() {
		for (RoomLeases.Lease<Room> l : peer.leases.expire()) {
			l.holder.fail(FailureCause.LEASE_EXPIRED, leaseExpired(l));
		}
	}

	private String leaseExpired(RoomLeases.Lease<Room> l) {
		// A lease ticks the tick its renewal came in: n ticks since is over n - 1 ticks of time, and at most n.
		long since = peer.leases.since(l);
		long silent = peer.leases.sinceLastRenewal();
		String others = silent < 0 ? "it never renewed a room"
				: silent < since ? "it renewed other rooms within the last " + support.leaseMillis(silent)
						+ " ms, so it no longer holds this one"
						: "it renewed nothing since";
		return RoomLeases.expired(l.room, "no renewal from decode rank " + connection.remoteAddress()
				+ " (incarnation " + Incarnation.text(peer.decodeIncarnation) + ") for over "
				+ support.leaseMillis(since - 1) + " ms (lease " + support.config.leasePeriod().toMillis() + " ms; "
				+ others + ")");
	}

	@Override
	public void onClose(CloseReason first, CloseReason counted) {
		closed.accept(this, counted);
		for (Room r : peer.rooms) {
			if (r instanceof PrefillTransfer t && t.orphan(peer)) {
				// Its owner may hand it to another decode: it waits for the claim, on what its lease has left.
				continue;
			}
			r.fail(Failures.lostWith(first), "Lost connection with decode " + connection.remoteAddress()
					+ " (incarnation " + Incarnation.text(peer.decodeIncarnation) + "): " + first);
		}
		peer.rooms.clear();
		peer.leases.clear();
	}

	@Override
	public String toString() {
		return connection.toString();
	}
}
