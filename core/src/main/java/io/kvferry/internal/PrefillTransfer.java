package io.kvferry.internal;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.kvferry.FailureCause;
import io.kvferry.PrefillConfig;
import io.kvferry.KVPoll;
import io.kvferry.KVSender;
import io.kvferry.KVTransferException;
import io.kvferry.RoomPath;
import io.kvferry.RoomPriority;
import io.kvferry.RoomRequest;
import io.kvferry.RoomTrace;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.SendGate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * One prefill room, which is also its sender: the decode ranks that asked for it, the chunks the engine hands it, and
 * the moves between them. A chunk goes to every destination as soon as all of them asked (before, it waits here);
 * the last one carries the state slots and the aux row, then each destination gets its Success, and the room succeeds
 * here once every Success was written, so that no queued block still reads the engine's memory.
 *
 * <p>The bookkeeping is guarded by this room's monitor, which the engine's thread holds across a chunk; the gate the
 * room's data is sent behind reads a volatile word, so the transport never waits for that monitor.
 */
final class PrefillTransfer extends Room implements KVSender {

	private static final Logger log = LoggerFactory.getLogger(PrefillTransfer.class);

	private final PrefillSupport support;
	private final PrefillConfig config;
	// Guarded by this.
	private final List<PrefillDestination> destinations = new ArrayList<>(2);
	private int required = -1;
	private boolean ready;
	// The chunks sent before every destination asked.
	private final EarlyChunks early;
	private boolean hasSender;
	// While no sender claimed the room: what its requests hold of the rank's bounds.
	private final UnclaimedRooms.Hold held;
	final PrefillFeed feed;
	private boolean traced;
	private final long openedEpochNanos = DeferredRoomTracer.epochNanos();
	private volatile PrefillPeer abortedBy;
	// How the room moves to a replacement decode; guarded by this.
	private final Retarget retarget = new Retarget();
	// Completes once the room ended and every destination was told (or its connection was gone).
	private final Sinks.Empty<Void> handedOff = Sinks.empty();
	// Fixed before init, so that every block and message of the room queues alike.
	private volatile RoomPriority priority = RoomPriority.NORMAL;
	// What the room's blocks and its Success are sent behind: closed once the room ended.
	final SendGate gate = new SendGate() {
		@Override
		public boolean isOpen() {
			return isLive();
		}

		@Override
		public RoomPriority priority() {
			return priority;
		}
	};

	PrefillTransfer(PrefillSupport support, RoomTable<?> table, long id) {
		super(id, table);
		this.support = support;
		this.config = support.config;
		this.feed = new PrefillFeed(id);
		this.held = support.unclaimed.hold();
		this.early = new EarlyChunks(support.optimistic, config.optimisticRooms(), config.optimisticWait(),
				config.timer());
	}

	/**
	 * @return a sender for a room that ended before the engine claimed it (decode gave up, or the rank drains): born
	 *         failed, so the engine frees its pages now rather than after the bootstrap timeout
	 */
	static PrefillTransfer bornFailed(PrefillSupport support, RoomTable<?> table, long id, RoomTable.Ended how) {
		PrefillTransfer ended = new PrefillTransfer(support, table, id);
		ended.hasSender = true;
		ended.retryAfter(how.retryAfter());
		ended.advance(KVPoll.BOOTSTRAPPING);
		ended.fail(how.cause(), how.reason(), how.remote());
		return ended;
	}

	/** The engine claims the room: from now on it feeds the room's chunks. */
	synchronized void claim() {
		if (hasSender) {
			throw new IllegalStateException("room " + id + " already has a live sender on " + support.name);
		}
		hasSender = true;
		held.release();
		if (state() == null) {
			advance(KVPoll.BOOTSTRAPPING);
		}
		if (support.cpDummy) {
			// No decode rank asks a CP rank that moves nothing: it waits for the engine alone.
			clock.asked(RoomPath.UNKNOWN, true);
			advance(KVPoll.WAITING_FOR_INPUT);
		}
	}

	/** Fails the room unless the engine claimed it meanwhile. */
	synchronized void failUnclaimed(FailureCause cause, String reason) {
		if (!hasSender) {
			fail(cause, reason);
		}
	}

	// A room whose request the engine may hold but has not claimed yet: its later sender(room) is born failed with
	// how the room ended (decode gave up, its lease expired, its peer went away) instead of refused as reused.
	@Override
	RoomTable.Ended endedUnopened(KVPoll terminal) {
		return !hasSender && terminal == KVPoll.FAILED ? endedAs() : null;
	}

	/**
	 * Adds a decode rank's request; once every rank the requests announce asked, the room waits for input and the
	 * chunks that waited go.
	 */
	synchronized void admit(PrefillPeer s, KVMessage.TransferRequest req) {
		if (isTerminal()) {
			s.refuse(id, failure());
			return;
		}
		if (required >= 0 && (req.claim().isRetarget() || retarget.isOpen())) {
			// The room had its decode: only the claim its owner handed on takes it over.
			claimedBy(s, req);
			return;
		}
		if (askedByOthers(s) && (destinations.size() >= required || req.requiredDstInfoNum() != required)) {
			// Other decode ranks asked for the room, all it takes or with another count: it is theirs, and a request
			// that does not fit it is this rank's fault alone.
			s.refuse(id, new KVTransferException(id, FailureCause.PROTOCOL, "decode " + s.connection.remoteAddress()
					+ " asked for room " + id + ", which " + destinations.size() + " other decode rank(s) asked for "
					+ "already (" + required + " in all)", false));
			return;
		}
		if (state() == null) {
			advance(KVPoll.BOOTSTRAPPING);
		}
		String bad = req.dummy() ? null : s.plan.check(req.dstPages(), req.auxIndex(),
				StateLists.split(req.stateIndices(), req.stateCounts()));
		if (bad != null) {
			fail(FailureCause.PROTOCOL, "decode " + s.connection.remoteAddress() + " asked room " + id + " for " + bad);
			s.refuse(id, failure());
			return;
		}
		if (!hasSender) {
			String over = hold(s, req);
			if (over != null) {
				Duration hint = support.retryAfter.hint();
				retryAfter(hint);
				fail(FailureCause.OVERLOAD, Overload.reason(hint, "room " + id + " refused: " + over));
				s.refuse(id, failure());
				return;
			}
		}
		if (required < 0) {
			required = req.requiredDstInfoNum();
		}
		for (PrefillDestination d : destinations) {
			if (d.peer == s) {
				// One decode rank is one destination: a second request would take another rank's place and send the
				// room's bytes to this rank twice.
				fail(FailureCause.PROTOCOL, "decode " + s.connection.remoteAddress() + " asked for room " + id
						+ " twice");
				s.refuse(id, failure());
				return;
			}
		}
		if (req.requiredDstInfoNum() != required || destinations.size() >= required) {
			fail(FailureCause.PROTOCOL, "room " + id + " got " + (destinations.size() + 1)
					+ " decode destinations (expected " + required + ")");
			return;
		}
		if (!traced) {
			// The first request names decode's trace: the room's trace here is its child.
			traced = true;
			trace = support.traceLater(id, req.traceContext(), openedEpochNanos);
		}
		trace.event(RoomTrace.Event.REQUEST_RECEIVED, req.dstPages().length);
		destinations.add(new PrefillDestination(support, s, req, id, gate));
		retarget.handOn(req.claim());
		s.rooms.add(this);
		clock.asked(s.path(), destinations.size() == required);
		if (support.leasing()) {
			s.leases.hold(id, this);
		}
		if (destinations.size() == required) {
			ready = true;
			List<PrefillChunk> queued = early.release();
			advance(KVPoll.WAITING_FOR_INPUT);
			publish();
			for (PrefillChunk c : queued) {
				dispatch(c);
			}
		}
	}

	/**
	 * @return whether other decode ranks asked for the room and {@code s} did not: the room is theirs, and what
	 *         {@code s} says about it cannot end it
	 */
	synchronized boolean askedByOthers(PrefillPeer s) {
		for (PrefillDestination d : destinations) {
			if (d.peer == s) {
				return false;
			}
		}
		// While the room waits for a replacement it is nobody's to end but its owner's, by a claim.
		return !destinations.isEmpty() || retarget.isOpen();
	}

	/**
	 * A decode rank claims the room another decode held: refused unless its proof is the hand-off the room's decode
	 * brought; else the old decode is fenced, and once everything queued for it was written (or its connection is
	 * gone) the new one gets every chunk the engine sent so far, then the rest as they come. The caller holds the
	 * monitor.
	 */
	private void claimedBy(PrefillPeer s, KVMessage.TransferRequest req) {
		String refused = retarget.refuses(req.claim(), required);
		if (refused == null && !req.dummy()) {
			refused = s.plan.check(req.dstPages(), req.auxIndex(), StateLists.split(req.stateIndices(),
					req.stateCounts()));
		}
		if (refused != null) {
			// The claimant's fault alone: the room and its decode go on.
			s.refuse(id, new KVTransferException(id, FailureCause.PROTOCOL, "decode " + s.connection.remoteAddress()
					+ " may not take room " + id + " over: " + refused, false));
			return;
		}
		PrefillDestination next = new PrefillDestination(support, s, req, id, gate);
		PrefillDestination old = destinations.isEmpty() ? null : destinations.get(0);
		PrefillDestination replaced = retarget.claimed(req.claim(), next);
		s.rooms.add(this);
		if (support.leasing()) {
			support.orphans.release(id, this);
			s.leases.hold(id, this);
		}
		trace.event(RoomTrace.Event.REQUEST_RECEIVED, req.dstPages().length);
		String why = "room " + id + " was re-targeted to decode " + s.connection.remoteAddress() + " (incarnation "
				+ Incarnation.text(s.decodeIncarnation) + ") by its owner";
		log.info("[{}] {}", support.name, why);
		if (replaced != null) {
			// A claimant still waiting for its first byte: it is told, as the decode it was to replace is.
			letGo(replaced, why);
			replaced.peer.refuse(id, new KVTransferException(id, FailureCause.ABORTED, why, false));
		}
		if (old == null) {
			attach(next);
			return;
		}
		destinations.clear();
		letGo(old, why);
		// Only once the old decode's last queued byte of the room was written (or its connection is gone) does the
		// new one get any: never two at once.
		old.peer.connection.sendBehind(old.peer.refusal(id, new KVTransferException(id, FailureCause.ABORTED, why,
				false)), new KVMessage.AbortAck(id), () -> attach(next));
	}

	/** Fences a destination the room no longer serves: it gets none of the room's bytes, and holds no lease on it. */
	private void letGo(PrefillDestination d, String why) {
		d.fence();
		d.peer.rooms.remove(this);
		d.peer.leases.release(id, this);
		log.debug("[{}] decode {} let go of room {}: {}", support.name, d.peer.connection.remoteAddress(), id, why);
	}

	/** The replacement takes the room: every chunk sent so far goes to it, and from now on each new one. */
	private synchronized void attach(PrefillDestination next) {
		if (!retarget.attach(next) || isTerminal()) {
			// A later claim replaced it, or the room ended: ended() told it.
			return;
		}
		destinations.add(next);
		for (PrefillChunk c : retarget.sent()) {
			if (!next.isDummy() && next.refuses(this, feed, c)) {
				return;
			}
			if (!next.isDummy()) {
				next.send(feed, c);
			}
			if (c.last()) {
				finish();
			}
		}
		retarget.replayed();
	}

	/**
	 * The connection of a decode rank that asked for the room is gone: a room whose owner may hand it on keeps its
	 * pages for a replacement, for what its lease has left.
	 *
	 * @return whether the room waits for a replacement; false: it fails with the connection
	 */
	synchronized boolean orphan(PrefillPeer s) {
		if (isTerminal() || !support.leasing()) {
			return false;
		}
		PrefillDestination gone = retarget.lost(s);
		if (gone != null) {
			// A replacement that was still waiting for the old decode's bytes: the room waits on, on that lease.
			gone.fence();
			support.orphans.hold(id, this, s.leases.renewed(id));
			return true;
		}
		if (!retarget.handsOn() || destinations.size() != 1 || destinations.get(0).peer != s
				|| destinations.get(0).isDummy()) {
			return false;
		}
		PrefillDestination d = destinations.remove(0);
		d.fence();
		retarget.waitForClaim();
		support.orphans.hold(id, this, s.leases.renewed(id));
		log.info("[{}] room {} lost its decode {} (incarnation {}) and waits for a replacement its owner hands it to",
				support.name, id, s.connection.remoteAddress(), Incarnation.text(s.decodeIncarnation));
		return true;
	}

	/**
	 * Counts a request for a room the engine has not claimed: the room holds it until then, within the bounds, and
	 * fails if no sender claims it in time. The caller holds the room's monitor.
	 *
	 * @return why the request is refused, or null
	 */
	private String hold(PrefillPeer s, KVMessage.TransferRequest req) {
		boolean first = held.isEmpty();
		String over = held.add(s.unclaimed, UnclaimedRooms.bytesOf(req));
		if (over == null && first) {
			Duration limit = config.unclaimedRoomTimeout();
			held.expiry(config.timer().schedule(() -> failUnclaimed(FailureCause.TIMEOUT, "no sender claimed room "
					+ id + " within " + limit.toMillis() + " ms of decode's request"), limit.toNanos(),
					TimeUnit.NANOSECONDS));
		}
		return over;
	}

	private void publish() {
		PrefillDestination first = null;
		for (PrefillDestination d : destinations) {
			if (!d.isDummy()) {
				first = d;
				break;
			}
		}
		support.requests.emit(first == null ? new RoomRequest(id, 0, -1, true)
				: new RoomRequest(id, first.request.dstPages().length, first.request.auxIndex(), false,
						first.request.decodePrefixLen(), first.peer.plan.dstPageSize()));
	}

	@Override
	Mono<Void> released() {
		// A failed room errors only once the failure was handed to every decode rank, so that an engine freeing the
		// room's memory on the error frees nothing a queued block still reads.
		return handedOff.asMono();
	}

	@Override
	public void priority(RoomPriority priority) {
		Objects.requireNonNull(priority, "priority");
		synchronized (this) {
			if (feed.numPages >= 0) {
				throw new IllegalStateException("priority : set after init of room " + id
						+ " (expected: before init, so that every byte of the room queues alike)");
			}
			this.priority = priority;
		}
	}

	@Override
	public void init(int numPages, int auxIndex) {
		if (numPages < 0) {
			throw new IllegalArgumentException("numPages : " + numPages + " (expected: >= 0)");
		}
		PrefillFeed.checkAuxIndex(config.kvArgs(), auxIndex);
		synchronized (this) {
			feed.init(numPages, auxIndex);
		}
	}

	@Override
	public void send(int[] pageIndices, int[] stateIndices) {
		send(pageIndices, new int[][] { stateIndices });
	}

	@Override
	public void send(int[] pageIndices, int[][] stateIndices) {
		int[] pages = pageIndices.clone();
		int[][] states = PrefillFeed.checkPages(config.kvArgs(), pages, stateIndices);
		synchronized (this) {
			feed.checkWhole(pages);
			if (isTerminal()) {
				log.debug("[{}] room {} already {}, chunk dropped", support.name, id, state());
				return;
			}
			PrefillChunk c = feed.whole(pages, states);
			if (support.cpDummy) {
				if (feed.isComplete()) {
					advance(KVPoll.SUCCESS);
				}
				return;
			}
			dispatchOrHold(c);
		}
	}

	@Override
	public void sendLayer(int layer, int[] pageIndices, int[] stateIndices) {
		sendLayer(layer, pageIndices, new int[][] { stateIndices });
	}

	@Override
	public void sendLayer(int layer, int[] pageIndices, int[][] stateIndices) {
		int[] pages = pageIndices.clone();
		int[][] states = PrefillFeed.checkPages(config.kvArgs(), pages, stateIndices);
		LayerRegions layers = LayerRegions.of(config.kvArgs().kvRegions().size(), config.kvArgs().draftLayers(),
				config.kvArgs().isMla());
		int[] regions = layers.regions(layer);
		synchronized (this) {
			PrefillChunk c = feed.layer(layer, pages, states, layers, regions);
			if (isTerminal()) {
				log.debug("[{}] room {} already {}, layer {} dropped", support.name, id, state(), layer);
				return;
			}
			if (support.cpDummy) {
				if (c.closes() && feed.isComplete()) {
					advance(KVPoll.SUCCESS);
				}
				return;
			}
			dispatchOrHold(c);
		}
	}

	private void dispatchOrHold(PrefillChunk c) {
		if (ready) {
			dispatch(c);
			return;
		}
		// The engine sent before every decode rank asked: the room holds the chunk within the rank's bound on such
		// rooms, for a bounded wait.
		if (!early.hold(c, this::expireEarly)) {
			fail(FailureCause.REQUEUE, "room " + id + " was sent before decode asked for it, and " + early.limit()
					+ " rooms already hold such chunks on " + support.name + ": release its pages and queue it again");
		}
	}

	private synchronized void expireEarly() {
		if (early.isHolding() && !ready) {
			fail(FailureCause.REQUEUE, "room " + id + " was sent before decode asked for it, and "
					+ (required < 0 ? "no decode rank" : destinations.size() + " of " + required + " decode ranks")
					+ " asked within " + early.waitLimit().toMillis() + " ms: release its pages and queue it again");
		}
	}

	/** Moves one chunk to every destination, once each of them can take it. */
	private void dispatch(PrefillChunk c) {
		if (isTerminal()) {
			return;
		}
		advance(KVPoll.TRANSFERRING);
		if (c.offset() == 0 && c.opens()) {
			clock.firstByte();
			trace.event(RoomTrace.Event.FIRST_BYTE, 0);
		}
		if (!retarget.record(c)) {
			// No decode holds the room now: the chunk goes to the replacement when it attaches.
			return;
		}
		for (PrefillDestination d : destinations) {
			if (!d.isDummy() && d.refuses(this, feed, c)) {
				return;
			}
		}
		for (PrefillDestination d : destinations) {
			if (!d.isDummy()) {
				d.send(feed, c);
			}
		}
		if (c.closes()) {
			trace.event(RoomTrace.Event.CHUNK_SENT, c.pages().length);
		}
		if (c.last()) {
			finish();
		}
	}

	/** Sends Success to every real destination; the room succeeds here once all were written. */
	private void finish() {
		List<PrefillDestination> real = destinations.stream().filter(d -> !d.isDummy()).toList();
		if (real.isEmpty()) {
			advance(KVPoll.SUCCESS);
			return;
		}
		AtomicInteger remaining = new AtomicInteger(real.size());
		for (PrefillDestination d : real) {
			d.finish(() -> {
				if (remaining.decrementAndGet() == 0) {
					advance(KVPoll.SUCCESS);
				}
			}, e -> successLost(d, e));
		}
	}

	/**
	 * A destination's Success was not written. A decode the room moved away from is not the room's loss, nor is one
	 * whose room its owner may hand on: the close of its connection, which comes next, leaves the room to a
	 * replacement, which gets a Success of its own.
	 */
	private synchronized void successLost(PrefillDestination d, Throwable e) {
		if (d.isFenced() || (support.leasing() && retarget.handsOn())) {
			return;
		}
		fail(FailureCause.CONNECTION_LOST, "Failed to send kv chunk of " + id + " to decode "
				+ d.peer.connection.remoteAddress() + ": " + Failures.describe(e));
	}

	/** Decode aborted the room: it ends, and that decode rank's connection gets acks instead of a reason. */
	synchronized void abortedBy(PrefillPeer s, RoomTable.Ended how) {
		abortedBy = s;
		retryAfter(how.retryAfter());
		fail(how.cause(), how.reason(), true);
	}

	/** @return the trace to end: a room no decode rank asked for still gets one, without a parent */
	synchronized RoomTrace traceAtEnd() {
		if (!traced) {
			traced = true;
			trace = support.traceLater(id, "", openedEpochNanos);
		}
		return trace;
	}

	/**
	 * The room ended: every session forgets it, and a failed room is handed off once a message queued after its last
	 * block was written to each destination (a block handed to the transport before the gate closed still reads the
	 * room's memory until written). A rank that did not abort the room is told why; the aborting rank gets acks.
	 */
	void ended() {
		boolean failed = state() == KVPoll.FAILED;
		List<PrefillDestination> all;
		PrefillDestination waiting;
		synchronized (this) {
			all = new ArrayList<>(destinations);
			waiting = retarget.ended();
			early.release();
			held.release();
		}
		support.orphans.release(id, this);
		if (waiting != null) {
			// A replacement that claimed the room as it ended here: its pages are gone, so its engine recomputes.
			waiting.fence();
			waiting.peer.rooms.remove(this);
			waiting.peer.leases.release(id, this);
			waiting.peer.refuse(id, new RoomTable.Ended(FailureCause.LEASE_EXPIRED, "room " + id + " ended on prefill "
					+ "rank " + support.name + " (" + state() + ") as decode " + waiting.peer.connection.remoteAddress()
					+ " claimed it: its pages are no longer held; recompute it", false));
		}
		List<PrefillDestination> told = failed ? all : List.of();
		AtomicInteger untold = new AtomicInteger(told.size() + 1);
		// Written, or its connection is gone (decode then fails the room itself): either way handed off.
		Runnable one = () -> {
			if (untold.decrementAndGet() == 0) {
				handedOff.tryEmitEmpty();
			}
		};
		for (PrefillDestination d : all) {
			d.peer.rooms.remove(this);
			d.peer.leases.release(id, this);
		}
		for (PrefillDestination d : told) {
			KVMessage ack = new KVMessage.AbortAck(id);
			d.peer.connection.sendBehind(d.peer == abortedBy ? ack : d.peer.refusal(id, failure()), ack, one);
		}
		one.run();
	}

	@Override
	public String toString() {
		return "PrefillTransfer{room=" + id + ", state=" + state() + '}';
	}
}
