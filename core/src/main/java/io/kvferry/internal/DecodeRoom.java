package io.kvferry.internal;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

import io.kvferry.FailureCause;
import io.kvferry.HostPort;
import io.kvferry.KVArgs;
import io.kvferry.KVOverloadException;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVTransferException;
import io.kvferry.RoomClaim;
import io.kvferry.RoomPath;
import io.kvferry.RoomTrace;
import io.kvferry.internal.stripe.Tally;
import io.kvferry.internal.topology.RankMapping;
import io.kvferry.internal.topology.RankTarget;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.PayloadSink;
import io.kvferry.spi.RegionKind;
import io.kvferry.spi.ScatterHeader;
import io.kvferry.spi.SendListener;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Scheduler;

/**
 * One room on a decode rank, and its {@link KVReceiver}: what it asked of which prefill ranks, the grant and ledger
 * that check and count every write, its layers, and its verdict ({@link RoomVerdict}), which comes from the ledger
 * alone once every rank that writes the room reported Success with exactly the bytes that landed.
 *
 * <p>The room's pages are released (safe to reuse) once no byte can land in them any more: at Success, or after a
 * failure once every prefill rank that was asked to write the room acknowledged the abort, reported the room ended,
 * or lost its connection.
 *
 * <p>The transport's threads accept bytes without this object's monitor: they read the room's state and the
 * {@code flags} word, both volatile, and the ledger records writes under its own. The monitor guards what the room
 * asked and the ranks' reports; no user code runs under it.
 */
final class DecodeRoom extends Room implements KVReceiver, DecodeSession.Inbox {

	private static final Logger log = LoggerFactory.getLogger(DecodeRoom.class);
	private static final int FIRST_BYTE = 1;
	// No byte may land any more: the room ended.
	private static final int CLOSED = 2;
	private static final AtomicIntegerFieldUpdater<DecodeRoom> FLAGS = AtomicIntegerFieldUpdater
			.newUpdater(DecodeRoom.class, "flags");

	private final DecodeSupport support;
	final HostPort bootstrap;
	private final Scheduler callbacks;
	// Completes once no byte can land in the room's pages any more.
	private final Sinks.Empty<Void> released = Sinks.empty();
	private final BooleanSupplier live = this::acceptsBytes;
	// One for every writer of the room: a writer carries its write's fields, so none needs a callback of its own.
	private final PayloadWriter.Completion landing = this::landed;
	private final LayerLanding layers;
	// The generation of this rank's regions the room lands in, read once as it is made.
	private final DecodeSupport.Registered own;
	private volatile int flags;
	// Set with the requests, before any byte can land.
	private volatile GrantLedger ledger;
	// What each prefill rank reported, and when the room is done: its state is guarded by this room's monitor.
	private final RoomVerdict verdict;
	// The ranks asked to write the room's pages: a failure waits for them before release.
	private final Set<DecodeSession> writers = ConcurrentHashMap.newKeySet();
	// Guarded by this.
	private RankMapping mapping;
	private List<DecodeSession> sessions;
	private int[] pages;
	private int auxIndex = -1;
	private int[][] stateSlots;
	private int prefixLen;
	// What the room's requests present to prefill: how the owner may move the room on, and its proof for a replacement.
	private volatile RoomClaim claim = RoomClaim.NONE;
	// The sessions whose bound of rooms in flight counts this room, until it ends; guarded by this.
	List<DecodeSession> countedOn;

	DecodeRoom(DecodeSupport support, RoomTable<?> table, long id, HostPort bootstrap) {
		super(id, table, true);
		this.support = support;
		this.bootstrap = bootstrap;
		this.callbacks = support.config.callbackScheduler();
		this.own = support.registered;
		this.layers = new LayerLanding(own.layers(), live);
		this.verdict = new RoomVerdict(this, callbacks, () -> ledger);
	}

	@Override
	Mono<Void> released() {
		// A failed room errors only once its pages are released, so that freeing them on the error is safe; the
		// exception is made then, so that its landed pages count every byte that could still land.
		return released.asMono();
	}

	@Override
	public void verify(Supplier<String> check) {
		verdict.verify(check);
	}

	@Override
	public void claim(RoomClaim claim) {
		this.claim = Objects.requireNonNull(claim, "claim");
	}

	@Override
	public Flux<Integer> layers() {
		return layers.flux(callbacks);
	}

	@Override
	public void sendMetadata(int[] pageIndices, int auxIndex, int[] stateIndices) {
		sendMetadata(0, pageIndices, auxIndex, new int[][] { stateIndices });
	}

	@Override
	public void sendMetadata(int decodePrefixLen, int[] pageIndices, int auxIndex, int[][] stateIndices) {
		int[] given = pageIndices.clone();
		int[][] states = RoomPlan.checkMetadata(own.args(), support.config.layout().attnCpSize(),
				decodePrefixLen, given, auxIndex, stateIndices);
		// Read when the trace started, on the thread that made the receiver: no tracing code runs here.
		String traceContext = trace.context();
		synchronized (this) {
			if (pages != null) {
				throw new IllegalStateException("room " + id + ": sendMetadata called twice");
			}
			pages = given;
			this.auxIndex = auxIndex;
			stateSlots = states;
			prefixLen = decodePrefixLen;
			if (mapping != null && !isTerminal()) {
				sendRequests(traceContext);
			}
		}
	}

	/** The room's prefill ranks are known and connected: ask them, once the pages are known too. */
	void resolved(DecodeRoutes.Resolved resolved) {
		// Read when the trace started, on the thread that made the receiver: no tracing code runs here.
		String traceContext = trace.context();
		synchronized (this) {
			if (isTerminal()) {
				// Gave up while resolving: prefill ranks that already made a sender for the room must hear of it.
				for (DecodeSession s : new LinkedHashSet<>(resolved.sessions())) {
					s.abort(id, endedAs());
				}
				return;
			}
			mapping = resolved.mapping();
			sessions = resolved.sessions();
			for (DecodeSession s : sessions) {
				s.rooms.add(this);
				if (!s.isUsable()) {
					// A session can outlive its connection by a moment; a rank that said it drains went on purpose.
					String drainedReason = s.draining;
					if (drainedReason != null) {
						fail(FailureCause.DRAINING, "prefill rank " + s.endpoint + " drained (" + drainedReason
								+ ") and is gone: its connection closed", true);
					}
					else {
						fail(FailureCause.CONNECTION_LOST, "Lost connection with prefill rank " + s.endpoint);
					}
					return;
				}
				String draining = s.draining;
				if (draining != null) {
					// Asking would only get the refusal back: the rank admits no new rooms.
					fail(FailureCause.DRAINING, "Prefill rank " + s.endpoint + " refused room " + id + ": " + draining,
							true);
					return;
				}
			}
			RoomPath.Requirement required = support.config.requiredPath();
			RoomPath travelled = RoomPath.UNKNOWN;
			for (DecodeSession s : sessions) {
				travelled = travelled.and(s.connection.path());
			}
			for (DecodeSession s : sessions) {
				String refused = PathCheck.refusal(id, required, s.connection.path(), "prefill rank " + s.endpoint);
				if (refused != null) {
					// The room's path is the one it was refused for, not unknown.
					clock.refused(travelled);
					fail(FailureCause.INCOMPATIBLE, refused);
					return;
				}
			}
			clock.connected(travelled);
			advance(KVPoll.WAITING_FOR_INPUT);
			if (pages != null) {
				sendRequests(traceContext);
			}
		}
	}

	/** Opens the room's grant and ledger, then sends the room's destinations to every target; under the monitor. */
	private void sendRequests(String traceContext) {
		KVArgs args = own.args();
		List<RankTarget> targets = mapping.targets();
		GrantLedger l;
		try {
			l = RoomPlan.ledger(args, own.layout(), pages, auxIndex, StateLists.perRegion(args.stateKinds(),
					args.stateRegions().size(), stateSlots), sources());
		}
		catch (RuntimeException e) {
			// The handshakes passed, so the ranks can pair; should the plan still not add up, no byte may be asked for.
			fail(FailureCause.INCOMPATIBLE, "room " + id + ": " + Failures.describe(e));
			return;
		}
		layers.expect(l);
		ledger = l;
		for (int i = 0; i < targets.size(); i++) {
			DecodeSession s = sessions.get(i);
			boolean dummy = targets.get(i).dummy();
			KVMessage.TransferRequest req = dummy
					? new KVMessage.TransferRequest(id, new int[0], -1, new int[0], mapping.requiredDstInfoNum(), true,
							traceContext)
					: new KVMessage.TransferRequest(id, pages, auxIndex, StateLists.flatten(stateSlots),
							mapping.requiredDstInfoNum(), false, traceContext, prefixLen,
							StateLists.counts(args.stateKinds(), stateSlots), claim);
			if (!dummy) {
				// From here on this rank may write the room's pages: a failure must wait for it before release.
				s.connection.expect(id);
				writers.add(s);
			}
			s.send(req, SendListener.ifFailed(e -> {
				// A send fails mostly because the connection went: say so as the connection's own loss does.
				if (!s.connection.isActive()) {
					s.lost(this, "Lost connection with prefill rank " + s.endpoint + " while sending room " + id + ": "
							+ Failures.describe(e), FailureCause.CONNECTION_LOST);
					return;
				}
				fail(FailureCause.OTHER, "Failed to send room " + id + " to prefill rank " + s.endpoint + ": "
						+ Failures.describe(e));
			}));
		}
		trace.event(RoomTrace.Event.REQUEST_SENT, pages.length);
	}

	/** @return the layouts of the prefill ranks that write the room (not MLA's dummy ranks), with their CP ranks */
	private List<RoomPlan.Source> sources() {
		List<RoomPlan.Source> sources = new ArrayList<>();
		List<RankTarget> targets = mapping.targets();
		for (int i = 0; i < targets.size(); i++) {
			if (!targets.get(i).dummy()) {
				sources.add(new RoomPlan.Source(sessions.get(i).prefill, targets.get(i).cpRank()));
			}
		}
		return sources;
	}

	/**
	 * @return whether the room asked {@code s} to write its pages (not only to report, as MLA's dummy ranks are asked):
	 *         only then may a data header or a fence from it name the room; lock-free
	 */
	@Override
	public boolean writtenBy(DecodeSession s) {
		return writers.contains(s);
	}

	/** @return the heap the room's ledger holds ({@link GrantLedger#retainedBytes}), or -1 before it asked its ranks */
	long ledgerBytes() {
		GrantLedger l = ledger;
		return l == null ? -1 : l.retainedBytes();
	}

	/** While Bootstrapping: the last failure of the prefill instance's look-up, which is retried meanwhile. */
	@Override
	String stalledBy() {
		String failure = state() == KVPoll.BOOTSTRAPPING ? support.lookUpFailures.get(bootstrap) : null;
		return failure == null ? null : "the look-up of prefill instance " + bootstrap + " keeps failing: " + failure;
	}

	@Override
	public boolean hasEnded() {
		return isTerminal();
	}

	@Override
	public void brokenFrame(FailureCause cause, String reason) {
		fail(cause, reason);
	}

	/** @return whether a byte may still land: the room is live and not closed; two volatile reads, no lock */
	boolean acceptsBytes() {
		return (flags & CLOSED) == 0 && isLive();
	}

	/**
	 * A data header from {@code from}: checked against the grant, recorded in the ledger, then handed a writer that
	 * lands its payload. On the transport's thread, without this object's monitor.
	 *
	 * @param tally what landed of the room on the header's path, or null when the rank was not asked for the room
	 * @return where the payload lands, or null to drop it (the room ended, or failed here)
	 */
	@Override
	public PayloadSink accept(DecodeSession from, DataHeader h, Tally tally) {
		GrantLedger l = ledgerFor(from, tally);
		return l == null ? null
				: land(from, l, h.kind(), h.region(), h.dstOffset(), h.chunkLen(), h.dstStride(), h.count(), tally);
	}

	/**
	 * A scatter frame's pieces from {@code from}: what they share (this room, the rank, the stripe) is checked once,
	 * each piece against the grant and the ledger as {@link #accept(DecodeSession, DataHeader, Tally)} does. The first
	 * refused piece fails the room: it and the pieces after it get no sink, and those handed out before it write
	 * nothing more, since the room no longer takes bytes.
	 */
	@Override
	public void accept(DecodeSession from, ScatterHeader h, Tally tally, PayloadSink[] sinks) {
		GrantLedger l = ledgerFor(from, tally);
		for (int i = 0; l != null && i < h.count(); i++) {
			// A piece is a one-chunk write, judged from the piece table's fields as a header's are.
			PayloadSink sink = land(from, l, h.kind(), h.region(i), h.dstOffset(i), h.length(i), h.length(i), 1, tally);
			if (sink == null) {
				return;
			}
			sinks[i] = sink;
		}
	}

	/** @return the ledger when the room takes bytes from {@code from}; null when it does not (failed here if unasked) */
	private GrantLedger ledgerFor(DecodeSession from, Tally tally) {
		if (!acceptsBytes()) {
			return null;
		}
		GrantLedger l = ledger;
		if (l == null || tally == null || !writers.contains(from)) {
			fail(FailureCause.PROTOCOL, "prefill rank " + from.endpoint + " wrote outside room " + id + ": the room "
					+ "asked this prefill rank for nothing");
			return null;
		}
		return l;
	}

	/**
	 * @return a writer for the write's payload (a header's fields) once the grant allowed it and the ledger recorded
	 *         it; else null
	 */
	private PayloadSink land(DecodeSession from, GrantLedger l, RegionKind kind, int region, long offset,
			int chunkLen, long dstStride, int count, Tally tally) {
		long destination;
		try {
			destination = l.destination(kind, region, offset, chunkLen, dstStride, count);
		}
		catch (WriteRefused refused) {
			fail(FailureCause.PROTOCOL, "prefill rank " + from.endpoint + " wrote outside room " + id + ": "
					+ refused.getMessage());
			return null;
		}
		long stride = GrantLedger.stride(chunkLen, dstStride, count);
		try {
			l.reserve(kind, region, offset, chunkLen, stride, count);
		}
		catch (WriteRefused refused) {
			fail(FailureCause.PROTOCOL, "prefill rank " + from.endpoint + " wrote room " + id
					+ " more than its ledger allows: " + refused.getMessage());
			return null;
		}
		if (firstByte()) {
			clock.firstByte();
			trace.event(RoomTrace.Event.FIRST_BYTE, 0);
			advance(KVPoll.TRANSFERRING);
		}
		return new PayloadWriter(destination, kind, region, offset, chunkLen, stride, count, live, tally, landing);
	}

	/** A writer's whole payload landed: the ledger counts it, and the room's last byte completes a buffer. */
	private void landed(PayloadWriter w, long n) {
		// Writers exist only once the ledger does (land), and it is never replaced.
		GrantLedger l = Objects.requireNonNull(ledger, "ledger");
		support.bytesReceived.add(n);
		boolean bufferComplete = l.landed(w.kind(), w.region(), n);
		l.landedWrite(w.kind(), w.region(), w.offset(), w.chunkLen(), w.stride(), w.count());
		if (bufferComplete) {
			// The room's last byte completes a buffer: stamping only there leaves the last stamp where it was, without
			// a clock read and a fenced store per piece.
			clock.landed();
			if (w.kind() == RegionKind.KV) {
				layers.landed(w.region());
			}
		}
	}

	private boolean firstByte() {
		int f;
		do {
			f = flags;
			if ((f & FIRST_BYTE) != 0) {
				return false;
			}
		}
		while (!FLAGS.compareAndSet(this, f, f | FIRST_BYTE));
		return true;
	}

	/**
	 * A prefill rank's report on the room, judged by its verdict.
	 *
	 * @return false when the room is live and did not ask the rank (the rank's fault, not the room's: the room ignores
	 *         the report)
	 */
	@Override
	public boolean reported(DecodeSession s, KVMessage.Status status) {
		synchronized (this) {
			if (sessions == null || !sessions.contains(s)) {
				return isTerminal();
			}
			verdict.reported(s, status, mapping.requiredPrefillResponseNum());
		}
		return true;
	}

	/**
	 * The room ended: no byte lands from here on, its ranks forget it, and a failed room's ranks that may still
	 * write it are told; its pages are released at once after Success, else once each of them went quiet.
	 */
	void ended() {
		boolean failed = state() == KVPoll.FAILED;
		layers.end(state() == KVPoll.SUCCESS);
		Set<DecodeSession> all;
		Set<DecodeSession> targets;
		Set<DecodeSession> pending = new HashSet<>();
		RoomTable.Ended how;
		synchronized (this) {
			how = endedAs();
			FLAGS.accumulateAndGet(this, CLOSED, (f, closed) -> f | closed);
			all = sessions == null ? Set.of() : new LinkedHashSet<>(sessions);
			targets = new LinkedHashSet<>(all);
			if (failed) {
				targets.removeIf(verdict::finished);
				for (DecodeSession s : writers) {
					if (!verdict.finished(s)) {
						pending.add(s);
					}
				}
			}
		}
		for (DecodeSession s : all) {
			s.rooms.remove(this);
			s.connection.forget(id);
		}
		if (!failed) {
			released.tryEmitEmpty();
			return;
		}
		new AbortWait(support, id, pending, released).start(targets, how);
	}

	/** A failed room's exception carries the pages that landed whole, read once no byte can land any more. */
	@Override
	synchronized KVTransferException failure() {
		KVTransferException f = super.failure();
		if (f instanceof KVOverloadException) {
			// Turned away before any page was asked for: nothing landed, and the retry hint must stay.
			return f;
		}
		return new KVTransferException(f.room(), f.failureCause(), f.reason(), f.isFromAnotherRank(),
				RoomPlan.landedPages(pages == null ? new int[0] : pages, ledger, own.layers()));
	}

	@Override
	public String toString() {
		return "Receiver{room=" + id + ", state=" + state() + '}';
	}
}
