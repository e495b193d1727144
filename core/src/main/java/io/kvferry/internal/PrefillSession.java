package io.kvferry.internal;

import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import io.kvferry.FailureCause;
import io.kvferry.KVOverloadException;
import io.kvferry.KVTransferException;
import io.kvferry.RoomPath;
import io.kvferry.TopologyException;
import io.kvferry.internal.stripe.StripedConnection;
import io.kvferry.spi.CloseReason;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.SendGate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One decode rank, as the prefill rank sees it: its handshake, the rooms it asks for, their refusals and its aborts.
 * Its messages come in order on one connection's thread; the rooms it asked for fail when its connection is lost.
 */
final class PrefillSession implements StripedConnection.Handler {

	private static final Logger log = LoggerFactory.getLogger(PrefillSession.class);
	// Ends the reason of a room decode refused as overloaded.
	private static final String TOLD_BY_DECODE = " (told by decode ";

	final DefaultPrefillKVManager manager;
	final StripedConnection connection;
	final Set<PrefillTransfer> rooms = ConcurrentHashMap.newKeySet();
	// The leases this decode rank renews on the rooms it asked for.
	final RoomLeases<PrefillTransfer> leases;
	// Rooms this decode rank asked for that no sender claimed yet.
	final AtomicInteger unclaimed = new AtomicInteger();
	// Set by the handshake: how this rank's buffers map onto the decode rank's.
	volatile TransferPlan plan;
	// The decode rank's incarnation from its handshake: a decode rank that restarts comes back as another session.
	volatile long decodeIncarnation;
	// How the decode rank's connections move bytes: read at its first request, once every stripe joined, and kept.
	private volatile RoomPath path;

	PrefillSession(DefaultPrefillKVManager manager, StripedConnection connection) {
		this.manager = manager;
		this.connection = connection;
		this.leases = new RoomLeases<>(manager.leaseTicks());
	}

	@Override
	public void onMessage(KVMessage message) {
		if (message instanceof KVMessage.Hello hello) {
			onHello(hello);
		}
		else if (plan == null) {
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
				PrefillTransfer r = manager.table.get(req.room());
				String why = "bad transfer request for room " + req.room() + " from decode "
						+ connection.remoteAddress() + ": " + BaseKVManager.describe(e);
				log.warn("[{}] {}", manager.name, why, e);
				if (r != null) {
					r.fail(FailureCause.PROTOCOL, why);
				}
			}
		}
		else if (message instanceof KVMessage.Renew renew) {
			leases.renew(renew.rooms());
		}
		else if (message instanceof KVMessage.Abort abort) {
			onAbort(abort);
		}
		else {
			connection.close("unexpected " + message.getClass().getSimpleName() + " from decode");
		}
	}

	private void onHello(KVMessage.Hello hello) {
		if (plan != null) {
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
			reason = ModelFingerprint.mismatch(ModelFingerprint.of(manager.ownLayout),
					ModelFingerprint.of(hello.layout()));
		}
		if (reason == null) {
			try {
				plan = TransferPlan.of(manager.config.kvArgs(), manager.config.layout(), hello.layout(),
						manager.config.dsaCacheLayerSplit());
			}
			catch (TopologyException e) {
				reason = e.getMessage();
			}
		}
		if (reason != null) {
			String why = "prefill rank " + manager.name + " rejected decode " + connection.remoteAddress() + ": "
					+ reason;
			log.warn("[{}] {}", manager.name, why);
			connection.send(new KVMessage.Reject(why), SendGate.OPEN, Sends.either(() -> connection.close(why)));
			return;
		}
		long token = connection.expect(hello.stripes(), hello.checksums());
		log.debug("[{}] decode {} (incarnation {}) registered over {} connections: {}", manager.name,
				connection.remoteAddress(), Incarnation.text(hello.incarnation()), hello.stripes(), plan);
		decodeIncarnation = hello.incarnation();
		connection.send(new KVMessage.HelloAck(manager.ownLayout, token, manager.incarnation,
				manager.config.leasePeriod().toMillis()));
		String draining = manager.table.drainReason();
		if (draining != null) {
			connection.send(new KVMessage.Draining(draining));
		}
	}

	private void onTransferRequest(KVMessage.TransferRequest req) {
		RoomTable<PrefillTransfer> table = manager.table;
		String weakPath = PathCheck.refusal(req.room(), manager.config.requiredPath(), path(),
				"decode rank " + connection.remoteAddress());
		if (weakPath != null) {
			refusePath(req.room(), weakPath);
			return;
		}
		if (table.get(req.room()) == null && !table.isTombstoned(req.room())) {
			String over = manager.unclaimed.refuses(unclaimed, UnclaimedRooms.bytesOf(req));
			if (over != null) {
				Duration hint = manager.retryAfter.hint();
				RoomTable.Ended refused = new RoomTable.Ended(FailureCause.OVERLOAD, Overload.reason(hint, "room "
						+ req.room() + " refused: " + over), false, hint);
				// Refused before the room exists: the engine's sender(room) is then born failed, overloaded, with the
				// reason and its hint.
				if (table.endBeforeKnown(req.room(), refused) == null) {
					refuse(req.room(), refused);
					return;
				}
			}
		}
		PrefillTransfer r = table.getOrCreate(req.room(), id -> new PrefillTransfer(manager, id));
		if (r == null) {
			String draining = table.drainReason();
			if (draining != null && !table.isTombstoned(req.room())) {
				// The notice may not have gone out on this connection yet: decode must read it before the refusal.
				connection.send(new KVMessage.Draining(draining));
				refuse(req.room(), new RoomTable.Ended(FailureCause.DRAINING, draining, false));
				return;
			}
			// The room ended here before this request (its peers gave up, a lease expired): the request gets why.
			RoomTable.Ended early = table.endedBeforeKnown(req.room());
			String ended = "room " + req.room() + " already ended on prefill rank " + manager.name;
			refuse(req.room(), early == null ? new RoomTable.Ended(FailureCause.OTHER, ended, false)
					: new RoomTable.Ended(early.cause(), ended + ": " + early.reason(), false, early.retryAfter()));
			return;
		}
		r.admit(this, req);
	}

	/**
	 * This decode rank's connection does not meet the path the rank requires: the room fails here and no byte of it
	 * goes that way. A room the engine has not claimed yet ends before it is known, so that its sender is born failed.
	 */
	private void refusePath(long room, String why) {
		RoomTable<PrefillTransfer> table = manager.table;
		PrefillTransfer r = table.get(room);
		if (r == null && !table.isTombstoned(room)) {
			r = table.endBeforeKnown(room, new RoomTable.Ended(FailureCause.INCOMPATIBLE, why, false));
			if (r == null) {
				log.info("[{}] room {} refused before its sender: {}", manager.name, room, why);
			}
		}
		if (r != null) {
			// The room's path is the one it was refused for, not unknown.
			r.clock.refused(path());
			r.fail(FailureCause.INCOMPATIBLE, why);
		}
		refuse(room, new RoomTable.Ended(FailureCause.INCOMPATIBLE, why, false));
	}

	/** Tells the decode rank that its room failed here, and why. */
	void refuse(long room, KVTransferException failure) {
		connection.send(refusal(room, failure));
	}

	private void refuse(long room, RoomTable.Ended how) {
		connection.send(KVMessage.Status.failed(room, manager.uniqueRank, how.cause(), how.reason(),
				Overload.millis(how.retryAfter())));
	}

	/** @return the Failed status that tells the decode rank why its room failed here: the cause, and a hint */
	KVMessage.Status refusal(long room, KVTransferException failure) {
		Duration hint = failure instanceof KVOverloadException o ? o.retryAfter() : Duration.ZERO;
		return KVMessage.Status.failed(room, manager.uniqueRank, failure.failureCause(), failure.reason(),
				Overload.millis(hint));
	}

	private void onAbort(KVMessage.Abort abort) {
		// Decode turned the room away over its own bound: the room fails here as overloaded too, with decode's hint.
		// Any other abort is decode giving up, whatever its own reason.
		boolean overloaded = abort.cause() == FailureCause.OVERLOAD;
		String reason = overloaded ? abort.reason() + TOLD_BY_DECODE + connection.remoteAddress() + ")"
				: "Aborted by decode " + connection.remoteAddress() + ": " + abort.reason();
		RoomTable.Ended how = overloaded ? new RoomTable.Ended(FailureCause.OVERLOAD, reason, true,
				Duration.ofMillis(abort.retryAfterMillis())) : new RoomTable.Ended(FailureCause.ABORTED, reason, true);
		PrefillTransfer r = manager.table.get(abort.room());
		if (r != null && r.askedByOthers(this)) {
			// Another decode rank's room: this one cannot end it. Its abort is still answered, so it waits for nothing.
			log.debug("[{}] decode {} aborted room {}, which other decode ranks asked for: ignored", manager.name,
					connection.remoteAddress(), abort.room());
		}
		else {
			if (r == null) {
				r = manager.table.endBeforeKnown(abort.room(), how);
			}
			if (r != null) {
				r.abortedBy(this, how);
			}
		}
		// Everything queued for the room before this point is now dropped by its gate; the ack goes after it, on every
		// connection that may have carried the room's bytes.
		connection.broadcast(new KVMessage.AbortAck(abort.room()), null);
	}

	/** @return the path of this decode rank's connections; read once all its stripes joined */
	RoomPath path() {
		RoomPath p = path;
		if (p == null) {
			p = connection.path();
			path = p;
		}
		return p;
	}

	/** @return whether the handshake went through: the decode rank may be told of a drain */
	boolean isHandshaken() {
		return plan != null;
	}

	/** Fails the rooms whose lease this decode rank let run out; on the manager's lease timer. */
	void expireLeases() {
		for (RoomLeases.Lease<PrefillTransfer> l : leases.expire()) {
			l.holder.leaseExpired(leaseExpired(l));
		}
	}

	private String leaseExpired(RoomLeases.Lease<PrefillTransfer> l) {
		// A lease ticks the tick its renewal came in: n ticks since is over n - 1 ticks of time, and at most n.
		long since = leases.since(l);
		long silent = leases.sinceLastRenewal();
		String others = silent < 0 ? "it never renewed a room"
				: silent < since ? "it renewed other rooms within the last " + manager.leaseMillis(silent)
						+ " ms, so it no longer holds this one"
						: "it renewed nothing since";
		return RoomLeases.expired(l.room, "no renewal from decode rank " + connection.remoteAddress()
				+ " (incarnation " + Incarnation.text(decodeIncarnation) + ") for over "
				+ manager.leaseMillis(since - 1) + " ms (lease " + manager.config.leasePeriod().toMillis() + " ms; "
				+ others + ")");
	}

	@Override
	public void onClose(CloseReason first, CloseReason counted) {
		manager.sessionClosed(this, counted);
		leases.clear();
		for (PrefillTransfer r : rooms) {
			r.fail(BaseKVManager.lostWith(first), "Lost connection with decode " + connection.remoteAddress()
					+ " (incarnation " + Incarnation.text(decodeIncarnation) + "): " + first);
		}
		rooms.clear();
	}

	@Override
	public String toString() {
		return connection.toString();
	}
}
