package io.kvferry.internal;

import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.kvferry.DecodeSpec;
import io.kvferry.HostPort;
import io.kvferry.FailureCause;
import io.kvferry.KVManagerConfig;
import io.kvferry.PrefillKVManager;
import io.kvferry.KVPoll;
import io.kvferry.KVSender;
import io.kvferry.MemoryRegion;
import io.kvferry.ParallelLayout;
import io.kvferry.ProtocolException;
import io.kvferry.RoomRequest;
import io.kvferry.RoomTrace;
import io.kvferry.DisaggregationMode;
import io.kvferry.TopologyException;
import io.kvferry.bootstrap.PrefillRegistration;
import io.kvferry.spi.CloseReason;
import io.kvferry.spi.ConnectionHandler;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.KVTransport;
import io.kvferry.spi.PayloadSink;
import io.kvferry.spi.SendGate;
import io.kvferry.spi.SendListener;
import io.kvferry.internal.topology.LocalAddress;
import io.kvferry.internal.topology.RankMapping;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.Disposable;
import reactor.core.Disposables;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * The prefill side: listens for decode ranks, records which decode ranks wait for which room, and moves a room's
 * pages chunk by chunk as its sender is fed, then state, aux and Success, in that order on each connection.
 *
 * <p>A decode rank may open several connections (stripes) to this rank: the first carries the handshake and the
 * control messages, the others join it with the session's token. A room's blocks are dealt across the stripes in
 * pieces; before its Success each other stripe carries a fence with what it moved, and the room succeeds here only once
 * the Success and every fence were written, so that no queued piece still reads the engine's memory.
 */
final class DefaultPrefillKVManager extends BaseKVManager<DefaultPrefillKVManager.PrefillRoom> implements PrefillKVManager {

	private static final Logger log = LoggerFactory.getLogger(DefaultPrefillKVManager.class);

	private final int uniqueRank;
	private final boolean cpDummy;
	private final Set<Session> sessions = ConcurrentHashMap.newKeySet();
	// Every accepted connection until it closes, joined to a session or not: what closing the manager waits for.
	private final Set<Stripe> links = ConcurrentHashMap.newKeySet();
	// Sessions whose further stripes have not all joined yet, by token.
	private final ConcurrentHashMap<Long, Session> joining = new ConcurrentHashMap<>();
	// Session tokens: whoever knows one can join the session and receive its bytes, so they must be unguessable.
	private final SecureRandom tokens = seededRandom();
	private final HotStream<RoomRequest> requests;
	private final UnclaimedRooms unclaimed;
	private volatile KVTransport.Listener listener;
	private volatile HostPort endpoint;
	private volatile Disposable reregistration = Disposables.disposed();
	private volatile PrefillRegistration registration;
	private volatile Mono<Void> withdrawn = Mono.empty();

	private DefaultPrefillKVManager(KVManagerConfig config) {
		super(config);
		this.requests = new HotStream<>(config.callbackScheduler(), config.eventBufferSize(),
				// Later, on the timer: the emitter may hold another room's monitor.
				dropped -> config.timer().schedule(() -> requestDropped(dropped)));
		this.unclaimed = new UnclaimedRooms(config.unclaimedRoomsPerPeer(), config.unclaimedRooms());
		ParallelLayout l = config.layout();
		this.uniqueRank = RankMapping.prefillUniqueRank(l.attnTpRank(), l.ppSize(), l.ppRank(), l.attnCpSize(),
				l.attnCpRank());
		// A CP rank decode never asks (only CP rank 0 transfers): its senders end on the last chunk, moving nothing.
		this.cpDummy = l.attnCpRank() != 0 && !config.allCpRanksTransfer() && !config.dsaCacheLayerSplit();
	}

	/**
	 * @return a generator that draws tokens without touching a file: seeded here, on the caller's thread, so that an
	 *         event loop drawing a token later never blocks on the system's entropy source
	 */
	private static SecureRandom seededRandom() {
		SecureRandom random;
		try {
			random = SecureRandom.getInstance("DRBG");
		}
		catch (java.security.NoSuchAlgorithmException e) {
			random = new SecureRandom();
		}
		random.nextLong();
		return random;
	}

	static Mono<PrefillKVManager> start(KVManagerConfig config) {
		DefaultPrefillKVManager m = new DefaultPrefillKVManager(config);
		return config.transport().listen(config.bindAddress(), m::accept).flatMap(l -> {
			m.listener = l;
			m.endpoint = new HostPort(m.advertiseHost(l.address()), l.address().port());
			PrefillRegistration registration = new PrefillRegistration(PrefillRegistration.PREFILL, config.layout(),
					m.endpoint.host(), m.endpoint.port(), config.kvArgs().pageSize(), config.dsaCacheLayerSplit(),
					config.allCpRanksTransfer());
			log.info("[{}] listening on {} (advertised {}), registering with {}", m.name, l.address(), m.endpoint,
					config.bootstrapAddress());
			return config.bootstrapClient().register(config.bootstrapAddress(), registration)
					.onErrorResume(e -> {
						m.dispose();
						return m.onDispose().then(Mono.error(e));
					})
					.doOnSuccess(v -> {
						m.registration = registration;
						m.keepRegistered(registration);
					})
					.thenReturn((PrefillKVManager) m);
		})
				// Given up before it started (a start timeout, a cancelled subscriber): nobody else will close it.
				.doOnCancel(m::dispose);
	}

	/** Registers again now and then: a restarted bootstrap server keeps no table, and overwriting is harmless. */
	private void keepRegistered(PrefillRegistration registration) {
		Duration every = config.reregisterInterval();
		if (every.isZero() || every.isNegative()) {
			return;
		}
		reregistration = Flux.interval(every, every, config.timer())
				.onBackpressureDrop()
				.concatMap(i -> config.bootstrapClient().register(config.bootstrapAddress(), registration)
						.onErrorResume(e -> {
							log.warn("[{}] re-registration with {} failed: {}", name, config.bootstrapAddress(),
									describe(e));
							return Mono.empty();
						}), 1)
				.subscribe();
	}

	private String advertiseHost(HostPort bound) {
		if (config.advertiseHost() != null) {
			return config.advertiseHost();
		}
		String host = bound.host();
		boolean wildcard = host.equals("0.0.0.0") || host.equals("::") || host.equals("0:0:0:0:0:0:0:0");
		return wildcard ? LocalAddress.detect() : host;
	}

	private ConnectionHandler accept(KVConnection connection) {
		Stripe s = new Stripe(connection);
		links.add(s);
		return s;
	}

	/** A request no subscriber took in time: its room would wait for a sender nobody makes, so it fails now. */
	private void requestDropped(RoomRequest dropped) {
		PrefillRoom r = table.get(dropped.room());
		if (r == null) {
			return;
		}
		synchronized (r) {
			if (!r.hasSender) {
				table.fail(r, FailureCause.OVERLOAD, "the request for room " + r.id + " was dropped: a roomRequests() "
						+ "subscriber fell more than " + config.eventBufferSize() + " requests behind", false);
			}
		}
	}

	@Override
	public HostPort endpoint() {
		return endpoint;
	}

	@Override
	public KVSender sender(long room) {
		checkOpen();
		PrefillRoom r = table.getOrCreate(room, PrefillRoom::new);
		if (r == null) {
			String early = table.endedBeforeKnown(room);
			String draining = table.drainReason();
			if (early == null && (draining == null || table.isTombstoned(room))) {
				throw new IllegalStateException("room " + room + " already ended on " + name + "; rooms are not reused");
			}
			// Decode gave up before the engine got here, or this rank drains: the sender is born failed, so the engine
			// frees its pages now rather than after the bootstrap timeout.
			PrefillRoom ended = new PrefillRoom(room);
			ended.hasSender = true;
			table.advance(ended, KVPoll.BOOTSTRAPPING);
			if (early != null) {
				table.fail(ended, FailureCause.ABORTED, early, true);
			}
			else {
				table.fail(ended, FailureCause.DRAINING, draining, false);
			}
			return new Sender(ended);
		}
		synchronized (r) {
			if (r.hasSender) {
				throw new IllegalStateException("room " + room + " already has a live sender on " + name);
			}
			r.hasSender = true;
			release(r);
			if (r.state() == null) {
				table.advance(r, KVPoll.BOOTSTRAPPING);
			}
			if (cpDummy) {
				table.advance(r, KVPoll.WAITING_FOR_INPUT);
			}
		}
		return new Sender(r);
	}

	@Override
	public Flux<RoomRequest> roomRequests() {
		return requests.flux();
	}

	@Override
	int connectionCount() {
		return sessions.size();
	}

	@Override
	String drainingReason() {
		return "prefill rank " + name + " (" + endpoint + ") is draining and admits no new rooms";
	}

	/**
	 * Tells every connected decode rank, then withdraws the registration: in that order, so that a decode rank that
	 * watches the registry learns that this rank drains (and keeps its rooms in flight) before it sees the rank leave.
	 */
	@Override
	void onDraining(String reason) {
		Sinks.Empty<Void> done = Sinks.empty();
		withdrawn = done.asMono();
		// On every stripe: whichever stripe decode sees close first, it read the notice before, so the rooms it fails
		// then fail because this rank drains.
		List<KVConnection> handshaken = new ArrayList<>();
		for (Session s : sessions) {
			if (s.plan != null) {
				handshaken.addAll(s.attached());
			}
		}
		AtomicInteger untold = new AtomicInteger(handshaken.size() + 1);
		Runnable told = () -> {
			if (untold.decrementAndGet() == 0) {
				withdrawRegistration().doFinally(signal -> done.tryEmitEmpty()).subscribe();
			}
		};
		for (KVConnection c : handshaken) {
			c.send(new KVMessage.Draining(reason), SendGate.OPEN, Sends.either(told));
		}
		told.run();
	}

	@Override
	Mono<Void> drainResources() {
		return withdrawn;
	}

	/** @return withdraws the registration, once (re-registration stops first); never errors */
	private synchronized Mono<Void> withdrawRegistration() {
		reregistration.dispose();
		PrefillRegistration registered = registration;
		registration = null;
		if (registered == null) {
			return Mono.empty();
		}
		return config.bootstrapClient().deregister(config.bootstrapAddress(), registered)
				.onErrorResume(e -> {
					log.warn("[{}] withdrawing the registration from {} failed: {}", name, config.bootstrapAddress(),
							describe(e));
					return Mono.empty();
				});
	}

	@Override
	Mono<Void> closeResources() {
		requests.complete();
		List<Mono<Void>> closed = new ArrayList<>();
		// First, so that no decode rank picks this rank while it closes.
		closed.add(withdrawRegistration());
		for (Stripe s : links) {
			s.conn.close("KV manager " + name + " closed");
			// Until then queued blocks may still be read from the engine's memory.
			closed.add(s.conn.onClose());
		}
		KVTransport.Listener l = listener;
		if (l != null) {
			l.dispose();
		}
		return Mono.when(closed);
	}

	private void onTransferRequest(Session s, KVMessage.TransferRequest req) {
		if (table.get(req.room()) == null && !table.isTombstoned(req.room())) {
			String over = unclaimed.refuses(s.unclaimed, UnclaimedRooms.bytesOf(req));
			// Refused before the room exists: the engine's sender(room) is then born failed with the reason.
			if (over != null && table.endBeforeKnown(req.room(), "room " + req.room() + " refused: " + over) == null) {
				s.conn.send(new KVMessage.Status(req.room(), KVPoll.FAILED, uniqueRank,
						KVMessage.OVERLOADED + "room " + req.room() + " refused: " + over));
				return;
			}
		}
		PrefillRoom r = table.getOrCreate(req.room(), PrefillRoom::new);
		if (r == null) {
			String draining = table.drainReason();
			if (draining != null && !table.isTombstoned(req.room())) {
				// The notice may not have gone out on this connection yet: decode must read it before the refusal.
				s.conn.send(new KVMessage.Draining(draining));
				s.conn.send(new KVMessage.Status(req.room(), KVPoll.FAILED, uniqueRank, draining));
				return;
			}
			s.conn.send(new KVMessage.Status(req.room(), KVPoll.FAILED, uniqueRank,
					"room " + req.room() + " already ended on prefill rank " + name));
			return;
		}
		synchronized (r) {
			if (r.isTerminal()) {
				s.conn.send(new KVMessage.Status(req.room(), KVPoll.FAILED, uniqueRank, r.failure().reason()));
				return;
			}
			if (r.state() == null) {
				table.advance(r, KVPoll.BOOTSTRAPPING);
			}
			String bad = req.dummy() ? null : s.plan.check(req.dstPages(), req.auxIndex(),
					StateLists.split(req.stateIndices(), req.stateCounts()));
			if (bad != null) {
				table.fail(r, FailureCause.PROTOCOL, "decode " + s.conn.remoteAddress() + " asked room " + req.room()
						+ " for " + bad, false);
				s.conn.send(new KVMessage.Status(req.room(), KVPoll.FAILED, uniqueRank, r.failure().reason()));
				return;
			}
			if (!r.hasSender) {
				String over = hold(r, s, req);
				if (over != null) {
					table.fail(r, FailureCause.OVERLOAD, "room " + req.room() + " refused: " + over, false);
					s.conn.send(new KVMessage.Status(req.room(), KVPoll.FAILED, uniqueRank,
							KVMessage.OVERLOADED + r.failure().reason()));
					return;
				}
			}
			if (r.required < 0) {
				r.required = req.requiredDstInfoNum();
			}
			for (Destination d : r.destinations) {
				if (d.session == s) {
					// One decode rank is one destination: a second request would take another rank's place and
					// send the room's bytes to this rank twice.
					table.fail(r, FailureCause.PROTOCOL, "decode " + s.conn.remoteAddress() + " asked for room "
							+ req.room() + " twice", false);
					s.conn.send(new KVMessage.Status(req.room(), KVPoll.FAILED, uniqueRank, r.failure().reason()));
					return;
				}
			}
			if (req.requiredDstInfoNum() != r.required || r.destinations.size() >= r.required) {
				table.fail(r, FailureCause.PROTOCOL, "room " + req.room() + " got " + (r.destinations.size() + 1)
						+ " decode destinations (expected " + r.required + ")", false);
				return;
			}
			if (!r.traced) {
				// The first request names decode's trace: the room's trace here is its child.
				r.traced = true;
				r.trace = traceLater(DisaggregationMode.PREFILL, r.id, req.traceContext(),
						r.openedEpochNanos);
			}
			r.trace.event(RoomTrace.Event.REQUEST_RECEIVED, req.dstPages().length);
			r.destinations.add(new Destination(r, s, req));
			s.rooms.add(r);
			if (r.destinations.size() == r.required) {
				r.ready = true;
				table.advance(r, KVPoll.WAITING_FOR_INPUT);
				publish(r);
				List<Chunk> queued = new ArrayList<>(r.pending);
				r.pending.clear();
				for (Chunk c : queued) {
					dispatch(r, c);
				}
			}
		}
	}

	/**
	 * Counts a request for a room the engine has not claimed: the room holds it until then, within the bounds, and
	 * fails if no sender claims it in time. The caller holds the room's monitor.
	 *
	 * @return why the request is refused, or null
	 */
	private String hold(PrefillRoom r, Session s, KVMessage.TransferRequest req) {
		long bytes = UnclaimedRooms.bytesOf(req);
		boolean first = r.heldBy == null;
		String over = unclaimed.admit(first ? s.unclaimed : r.heldBy, first, bytes);
		if (over != null) {
			return over;
		}
		r.heldBytes += bytes;
		if (first) {
			r.heldBy = s.unclaimed;
			Duration limit = config.unclaimedRoomTimeout();
			config.timer().schedule(() -> {
				synchronized (r) {
					if (!r.hasSender) {
						table.fail(r, FailureCause.TIMEOUT, "no sender claimed room " + r.id + " within "
								+ limit.toMillis() + " ms of decode's request", false);
					}
				}
			}, limit.toNanos(), TimeUnit.NANOSECONDS);
		}
		return null;
	}

	/** Stops counting a room as unclaimed, once claimed or ended; the caller holds the room's monitor. */
	private void release(PrefillRoom r) {
		if (r.heldBy != null) {
			unclaimed.release(r.heldBy, r.heldBytes);
			r.heldBy = null;
			r.heldBytes = 0;
		}
	}

	private void publish(PrefillRoom r) {
		Destination first = r.destinations.stream().filter(d -> !d.request.dummy()).findFirst().orElse(null);
		RoomRequest event = first == null ? new RoomRequest(r.id, 0, -1, true)
				: new RoomRequest(r.id, first.request.dstPages().length, first.request.auxIndex(), false,
						first.request.decodePrefixLen());
		requests.emit(event);
	}

	/** Moves one chunk to every destination; the caller holds the room's monitor. */
	private void dispatch(PrefillRoom r, Chunk c) {
		if (r.isTerminal()) {
			return;
		}
		table.advance(r, KVPoll.TRANSFERRING);
		if (c.offset == 0 && c.opens) {
			r.trace.event(RoomTrace.Event.FIRST_BYTE, 0);
		}
		for (Destination d : r.destinations) {
			if (d.request.dummy()) {
				continue;
			}
			int[] dstAll = d.request.dstPages();
			int prefixPages = d.request.decodePrefixLen() / config.kvArgs().pageSize();
			if (prefixPages > r.numPages) {
				table.fail(r, FailureCause.INCOMPATIBLE, "decode " + d.session.conn.remoteAddress() + " holds a prefix"
						+ " of " + d.request.decodePrefixLen() + " tokens (" + prefixPages + " pages) of room " + r.id
						+ ", but the room has " + r.numPages + " pages", false);
				return;
			}
			if (c.offset + c.pages.length - prefixPages > dstAll.length) {
				table.fail(r, FailureCause.INCOMPATIBLE, "decode " + d.session.conn.remoteAddress() + " asked for "
						+ dstAll.length + " pages of room " + r.id + " after a prefix of " + prefixPages
						+ " pages, but prefill sends " + (c.offset + c.pages.length - prefixPages), false);
				return;
			}
			if (c.last && r.numPages - prefixPages != dstAll.length) {
				// Fewer pages than decode asked for would leave some of its pages unwritten.
				table.fail(r, FailureCause.INCOMPLETE, "decode " + d.session.conn.remoteAddress() + " asked for "
						+ dstAll.length + " pages of room " + r.id + " after a prefix of " + prefixPages
						+ " pages, but the room has only " + (r.numPages - prefixPages) + " after it", false);
				return;
			}
			if (c.last && d.request.auxIndex() >= 0 && r.auxIndex < 0 && !config.kvArgs().auxRegions().isEmpty()) {
				table.fail(r, FailureCause.INCOMPLETE, "decode " + d.session.conn.remoteAddress() + " asked for aux row "
						+ d.request.auxIndex() + " of room " + r.id + ", but the engine gave the room no aux row",
						false);
				return;
			}
			String badState = c.last ? d.session.plan.checkState(c.stateIndices, d.stateLists) : null;
			if (badState != null) {
				table.fail(r, FailureCause.INCOMPATIBLE, badState + " for room " + r.id, false);
				return;
			}
		}
		for (Destination d : r.destinations) {
			if (d.request.dummy()) {
				continue;
			}
			ChunkWindow w = ChunkWindow.of(c.offset, c.pages.length, r.numPages,
					d.request.decodePrefixLen() / config.kvArgs().pageSize(), config.layout(),
					config.allCpRanksTransfer());
			int[] srcPages = Arrays.copyOfRange(c.pages, w.from(), w.to());
			int[] dstPages = Arrays.copyOfRange(d.request.dstPages(), w.dstFrom(), w.dstFrom() + w.length());
			bytesSent.add(d.session.plan.sendKv(d, r.id, srcPages, dstPages, c.regions));
			if (c.closes) {
				pagesSent.add(w.length());
			}
			if (c.last) {
				bytesSent.add(d.session.plan.sendState(d, r.id, c.stateIndices, d.stateLists,
						warning -> log.warn("[{}] {}", name, warning)));
				bytesSent.add(d.session.plan.sendAux(d, r.id, r.auxIndex, d.request.auxIndex()));
			}
		}
		if (c.closes) {
			r.trace.event(RoomTrace.Event.CHUNK_SENT, c.pages.length);
		}
		if (c.last) {
			finish(r);
		}
	}

	/** Sends Success to every real destination; the room succeeds here once all were written. */
	private void finish(PrefillRoom r) {
		List<Destination> real = new ArrayList<>();
		for (Destination d : r.destinations) {
			if (!d.request.dummy()) {
				real.add(d);
			}
		}
		if (real.isEmpty()) {
			table.advance(r, KVPoll.SUCCESS);
			return;
		}
		int messages = 0;
		for (Destination d : real) {
			messages += d.tallies.length;
		}
		// A Success and a fence per further stripe: once all were written, every block before them was read.
		AtomicInteger remaining = new AtomicInteger(messages);
		for (Destination d : real) {
			SendListener written = Sends.of(() -> {
				if (remaining.decrementAndGet() == 0) {
					table.advance(r, KVPoll.SUCCESS);
				}
			}, e -> table.fail(r, FailureCause.CONNECTION_LOST, "Failed to send kv chunk of " + r.id + " to "
					+ d.session.conn.remoteAddress() + ": " + describe(e), false));
			long total = 0;
			for (int i = 1; i < d.tallies.length; i++) {
				Tally t = d.tallies[i];
				total += t.bytes();
				// Gated like the room's data: a room stopped meanwhile sends neither its blocks nor these.
				d.session.lanes[i].send(new KVMessage.Fence(r.id, t.bytes(), t.checksum()), r.gate, written);
			}
			Tally control = d.tallies[0];
			d.session.conn.send(new KVMessage.Status(r.id, KVPoll.SUCCESS, uniqueRank, "", total + control.bytes(),
					control.checksum()), r.gate, written);
		}
	}

	private void onAbort(Session s, KVMessage.Abort abort) {
		String reason = "Aborted by decode " + s.conn.remoteAddress() + ": " + abort.reason();
		PrefillRoom r = table.get(abort.room());
		if (r == null) {
			r = table.endBeforeKnown(abort.room(), reason);
		}
		if (r != null) {
			synchronized (r) {
				r.abortedBy = s;
				table.fail(r, FailureCause.ABORTED, reason, true);
			}
		}
		// Everything queued for the room before this point is now dropped by its gate; the ack goes after it, on every
		// stripe that may have carried the room's bytes.
		for (KVConnection lane : s.attached()) {
			lane.send(new KVMessage.AbortAck(abort.room()));
		}
	}

	/** A room no decode rank asked for still gets its trace, without a parent. */
	@Override
	RoomTrace traceAtEnd(PrefillRoom r) {
		synchronized (r) {
			if (!r.traced) {
				r.traced = true;
				r.trace = traceLater(DisaggregationMode.PREFILL, r.id, "", r.openedEpochNanos);
			}
			return r.trace;
		}
	}

	/** Tells the other destinations of a failed room, and forgets it in every session. */
	@Override
	void onTerminal(PrefillRoom r) {
		boolean failed = r.state() == KVPoll.FAILED;
		List<Destination> destinations;
		synchronized (r) {
			destinations = new ArrayList<>(r.destinations);
			r.pending.clear();
			release(r);
		}
		// A failed room is handed off once a message queued after its last frame was written on every stripe that
		// may have carried its bytes: a frame handed to the transport before the gate closed still reads the room's
		// memory until it is written. Stripe 0 of a rank that did not abort the room is told why; the others, and
		// every stripe of the aborting rank, get an AbortAck (decode ignores one it is not waiting for).
		Map<KVConnection, KVMessage> last = new LinkedHashMap<>();
		for (Destination d : destinations) {
			d.session.rooms.remove(r);
			if (!failed) {
				continue;
			}
			for (KVConnection lane : d.session.attached()) {
				if (lane.isActive()) {
					last.put(lane, lane == d.session.conn && d.session != r.abortedBy
							? new KVMessage.Status(r.id, KVPoll.FAILED, uniqueRank, r.failure().reason())
							: new KVMessage.AbortAck(r.id));
				}
			}
		}
		AtomicInteger untold = new AtomicInteger(last.size() + 1);
		// Written, or its connection is gone (decode then fails the room itself): either way handed off.
		Runnable told = () -> {
			if (untold.decrementAndGet() == 0) {
				r.handedOff.tryEmitEmpty();
			}
		};
		last.forEach((lane, message) -> lane.send(message, SendGate.OPEN, Sends.either(told)));
		told.run();
	}

	static final class PrefillRoom extends Room {
		// Guarded by this.
		final List<Destination> destinations = new ArrayList<>(2);
		final List<Chunk> pending = new ArrayList<>(1);
		int required = -1;
		boolean ready;
		boolean hasSender;
		// While no sender claimed the room: the requesting peer's count of such rooms, and the bytes its requests hold.
		AtomicInteger heldBy;
		long heldBytes;
		int numPages = -1;
		int auxIndex = -1;
		int cursor;
		// The chunk being sent layer by layer, until all its layers went.
		LayerwiseChunk layerwise;
		boolean traced;
		final long openedEpochNanos = epochNanos();
		volatile Session abortedBy;
		// Completes once the room ended and every destination was told (or its connection was gone).
		final Sinks.Empty<Void> handedOff = Sinks.empty();
		// What the room's blocks and its Success are sent behind: closed once the room ended.
		final SendGate gate = this::isLive;

		PrefillRoom(long id) {
			super(id);
		}
	}

	/**
	 * One decode rank that asked for the room: its request, and what this rank sent it for the room so far on each
	 * stripe (the Success and the fences report it). Fed under the room's monitor, so each stripe's tally follows the
	 * order of its connection.
	 */
	private static final class Destination implements TransferPlan.Outlet {
		final PrefillRoom room;
		final Session session;
		final KVMessage.TransferRequest request;
		final int[][] stateLists;
		final Tally[] tallies;
		// The stripe the next piece goes to.
		private int next;

		Destination(PrefillRoom room, Session session, KVMessage.TransferRequest request) {
			this.room = room;
			this.session = session;
			this.request = request;
			this.stateLists = StateLists.split(request.stateIndices(), request.stateCounts());
			this.tallies = new Tally[session.lanes.length];
			for (int i = 0; i < tallies.length; i++) {
				tallies[i] = new Tally(session.checksums);
			}
		}

		@Override
		public void send(DataBlock block) {
			if (tallies.length == 1) {
				deal(block);
			}
			else {
				Stripes.cut(block, Stripes.PIECE, this::deal);
			}
		}

		/** Sends a piece on the next stripe, round robin. */
		private void deal(DataBlock piece) {
			int lane = next;
			next = lane + 1 == tallies.length ? 0 : lane + 1;
			session.lanes[lane].sendData(piece);
			// Counted once the transport took it: a block it refuses is no byte of the Success.
			tallies[lane].add(piece);
		}

		@Override
		public SendGate gate() {
			return room.gate;
		}
	}

	/**
	 * A chunk, or one layer of it: {@code regions} are the KV buffers it moves (null: all), {@code opens} whether it is
	 * the chunk's first piece, {@code closes} its last; {@code last} whether it closes the room's last chunk.
	 */
	private record Chunk(int[] pages, int offset, boolean last, int[][] stateIndices, int[] regions, boolean opens,
			boolean closes) {

		Chunk(int[] pages, int offset, boolean last, int[][] stateIndices) {
			this(pages, offset, last, stateIndices, null, true, true);
		}
	}

	private final class Sender extends RoomHandle<PrefillRoom> implements KVSender {

		Sender(PrefillRoom room) {
			super(room, config.callbackScheduler());
		}

		@Override
		public void init(int numPages, int auxIndex) {
			if (numPages < 0) {
				throw new IllegalArgumentException("numPages : " + numPages + " (expected: >= 0)");
			}
			checkIndex("auxIndex", auxIndex, config.kvArgs().auxRegions().isEmpty() ? -1 : minItems(true), true);
			synchronized (room) {
				if (room.numPages >= 0) {
					throw new IllegalStateException("room " + room.id + ": init called twice");
				}
				room.numPages = numPages;
				room.auxIndex = auxIndex;
			}
		}

		@Override
		public void send(int[] pageIndices, int[] stateIndices) {
			send(pageIndices, new int[][] { stateIndices });
		}

		@Override
		public void send(int[] pageIndices, int[][] stateIndices) {
			int[] pages = pageIndices.clone();
			int[][] states = checkPages(pages, stateIndices);
			synchronized (room) {
				if (room.numPages < 0) {
					throw new IllegalStateException("room " + room.id + ": send before init");
				}
				if (room.layerwise != null) {
					throw new IllegalStateException("room " + room.id + ": whole chunk sent while "
							+ room.layerwise.progress() + " (expected: every layer of it first)");
				}
				if (room.cursor + pages.length > room.numPages) {
					throw new IllegalStateException("room " + room.id + ": sending " + (room.cursor + pages.length)
							+ " pages, more than the " + room.numPages + " given to init");
				}
				if (room.isTerminal()) {
					log.debug("[{}] room {} already {}, chunk dropped", name, room.id, room.state());
					return;
				}
				if (cpDummy) {
					room.cursor += pages.length;
					if (room.cursor == room.numPages) {
						table.advance(room, KVPoll.SUCCESS);
					}
					return;
				}
				Chunk c = new Chunk(pages, room.cursor, room.cursor + pages.length == room.numPages, states);
				room.cursor += pages.length;
				if (room.ready) {
					dispatch(room, c);
				}
				else {
					room.pending.add(c);
				}
			}
		}

		@Override
		public void sendLayer(int layer, int[] pageIndices, int[] stateIndices) {
			sendLayer(layer, pageIndices, new int[][] { stateIndices });
		}

		@Override
		public void sendLayer(int layer, int[] pageIndices, int[][] stateIndices) {
			int[] pages = pageIndices.clone();
			int[][] states = checkPages(pages, stateIndices);
			LayerRegions layers = LayerRegions.of(config.kvArgs().kvRegions().size(), config.kvArgs().draftLayers(),
					config.kvArgs().isMla());
			int[] regions = layers.regions(layer);
			synchronized (room) {
				if (room.numPages < 0) {
					throw new IllegalStateException("room " + room.id + ": sendLayer before init");
				}
				LayerwiseChunk chunk = room.layerwise;
				boolean opens = chunk == null;
				if (opens) {
					if (room.cursor + pages.length > room.numPages) {
						throw new IllegalStateException("room " + room.id + ": sending " + (room.cursor + pages.length)
								+ " pages, more than the " + room.numPages + " given to init");
					}
					chunk = new LayerwiseChunk(pages, room.cursor, layers.layers());
				}
				String refused = chunk.refuse(room.id, layer, pages);
				if (refused != null) {
					throw new IllegalStateException(refused);
				}
				chunk.sent(layer);
				boolean closes = chunk.isComplete();
				if (opens) {
					room.cursor += pages.length;
				}
				room.layerwise = closes ? null : chunk;
				if (room.isTerminal()) {
					log.debug("[{}] room {} already {}, layer {} dropped", name, room.id, room.state(), layer);
					return;
				}
				if (cpDummy) {
					if (closes && room.cursor == room.numPages) {
						table.advance(room, KVPoll.SUCCESS);
					}
					return;
				}
				Chunk c = new Chunk(pages, chunk.offset(), closes && chunk.offset() + pages.length == room.numPages,
						states, regions, opens, closes);
				if (room.ready) {
					dispatch(room, c);
				}
				else {
					room.pending.add(c);
				}
			}
		}

		@Override
		public Mono<Void> abort(String reason) {
			table.fail(room, FailureCause.ABORTED, abortReason(reason), false);
			return room.handedOff.asMono().publishOn(callbacks);
		}

		/** Checks a chunk's indices before anything is queued; returns the state lists, one per component. */
		private int[][] checkPages(int[] pages, int[][] stateIndices) {
			List<MemoryRegion> stateRegions = config.kvArgs().stateRegions();
			int[][] states = StateLists.check(config.kvArgs().stateKinds(), stateRegions.size(), stateIndices);
			long kvItems = minItems(false);
			for (int p : pages) {
				checkIndex("page index", p, kvItems, false);
			}
			int[][] perRegion = StateLists.perRegion(config.kvArgs().stateKinds(), stateRegions.size(), states);
			for (int i = 0; i < perRegion.length; i++) {
				for (int st : perRegion[i]) {
					checkIndex("state index", st, stateRegions.get(i).itemCount(), false);
				}
			}
			return states;
		}

		private long minItems(boolean aux) {
			return (aux ? config.kvArgs().auxRegions() : config.kvArgs().kvRegions()).stream()
					.mapToLong(x -> x.itemCount()).min().orElse(0);
		}

		private void checkIndex(String what, int index, long items, boolean allowNone) {
			if (allowNone && index == -1) {
				return;
			}
			if (index < 0 || index >= items) {
				throw new IllegalArgumentException(what + " : " + index + " (expected: 0.." + (items - 1) + ")");
			}
		}
	}

	/**
	 * One accepted connection: until its first message it belongs to no session; a Hello makes it stripe 0 of a new
	 * session, a Join a further stripe of an existing one.
	 */
	private final class Stripe implements ConnectionHandler {

		final KVConnection conn;
		// Set once, by the first message, on this connection's thread.
		private Session session;
		private int index;

		Stripe(KVConnection conn) {
			this.conn = conn;
		}

		@Override
		public void onMessage(KVConnection c, KVMessage message) {
			if (session == null) {
				if (message instanceof KVMessage.Hello hello) {
					session = new Session(conn);
					sessions.add(session);
					session.onHello(hello);
				}
				else if (message instanceof KVMessage.Join j) {
					join(j);
				}
				else {
					c.close("decode sent " + message.getClass().getSimpleName() + " before the handshake");
				}
			}
			else if (index == 0) {
				session.onMessage(c, message);
			}
			else {
				c.close("unexpected " + message.getClass().getSimpleName() + " from decode on stripe " + index
						+ " (expected: control messages on stripe 0 only)");
			}
		}

		/** Attaches this connection to the session its token names, or refuses it naming why. */
		private void join(KVMessage.Join j) {
			Session s = joining.get(j.token());
			String refused = s == null ? "unknown session token (expected: the token of a HelloAck that still waits "
					+ "for its stripes)" : s.attach(this, j.stripe());
			if (refused != null) {
				String why = "prefill rank " + name + " refused stripe " + j.stripe() + " from decode "
						+ conn.remoteAddress() + ": " + refused;
				log.warn("[{}] {}", name, why);
				conn.send(new KVMessage.Reject(why), SendGate.OPEN, Sends.either(() -> conn.close(why)));
				return;
			}
			session = s;
			index = j.stripe();
			conn.send(new KVMessage.Joined(index));
			String draining = table.drainReason();
			if (draining != null) {
				conn.send(new KVMessage.Draining(draining));
			}
		}

		@Override
		public PayloadSink onData(KVConnection c, DataHeader header) {
			throw new ProtocolException("decode " + c.remoteAddress() + " sent a data frame; prefill never receives KV");
		}

		@Override
		public void onClose(KVConnection c, CloseReason reason) {
			links.remove(this);
			Session s = session;
			if (s != null) {
				s.stripeClosed(c, reason);
			}
			else {
				connectionClosed(reason);
			}
		}
	}

	/** One decode rank: its handshake and rooms, over stripe 0 and the stripes that joined it. */
	private final class Session {

		final KVConnection conn;
		final Set<PrefillRoom> rooms = ConcurrentHashMap.newKeySet();
		// Rooms this decode rank asked for that no sender claimed yet.
		final AtomicInteger unclaimed = new AtomicInteger();
		volatile TransferPlan plan;
		volatile boolean checksums;
		// Index = stripe; set by the handshake, filled as stripes join, complete before the first room is served.
		volatile KVConnection[] lanes;
		// Guarded by this.
		private long token;
		private int joined;
		private int unclosed;
		private CloseReason closedBy;
		// A stripe's heartbeat loss, if any: the decode rank counts as lost to silence once.
		private CloseReason silentBy;

		Session(KVConnection conn) {
			this.conn = conn;
			this.lanes = new KVConnection[] { conn };
			this.joined = 1;
			this.unclosed = 1;
		}

		/** @return the stripes attached so far */
		synchronized List<KVConnection> attached() {
			return Stripes.attached(lanes);
		}

		/** @return null once {@code stripe} joined, else why it may not */
		synchronized String attach(Stripe link, int stripe) {
			if (closedBy != null) {
				return "the session closed (" + closedBy + ")";
			}
			if (stripe < 1 || stripe >= lanes.length) {
				return "stripe index " + stripe + " (expected: 1.." + (lanes.length - 1) + ", the session has "
						+ lanes.length + " stripes)";
			}
			if (lanes[stripe] != null) {
				return "stripe " + stripe + " already joined";
			}
			lanes[stripe] = link.conn;
			unclosed++;
			if (++joined == lanes.length) {
				joining.remove(token, this);
			}
			return null;
		}

		synchronized boolean isComplete() {
			return joined == lanes.length;
		}

		@Override
		public String toString() {
			return "session with decode " + conn.remoteAddress();
		}

		void onMessage(KVConnection c, KVMessage message) {
			if (message instanceof KVMessage.Hello hello) {
				onHello(hello);
			}
			else if (plan == null) {
				c.close("decode sent " + message.getClass().getSimpleName() + " before the handshake");
			}
			else if (message instanceof KVMessage.TransferRequest req) {
				if (!isComplete()) {
					c.close("decode sent a transfer request before its " + lanes.length + " stripes joined");
					return;
				}
				try {
					onTransferRequest(this, req);
				}
				catch (RuntimeException e) {
					// A request this rank cannot serve fails its room, not the connection the other rooms share.
					PrefillRoom r = table.get(req.room());
					String why = "bad transfer request for room " + req.room() + " from decode " + c.remoteAddress()
							+ ": " + describe(e);
					log.warn("[{}] {}", name, why, e);
					if (r != null) {
						table.fail(r, FailureCause.PROTOCOL, why, false);
					}
				}
			}
			else if (message instanceof KVMessage.Abort abort) {
				onAbort(this, abort);
			}
			else {
				c.close("unexpected " + message.getClass().getSimpleName() + " from decode");
			}
		}

		private void onHello(KVMessage.Hello hello) {
			if (plan != null) {
				conn.close("second handshake from decode");
				return;
			}
			String reason = null;
			if (hello.protocolVersion() != KVMessage.PROTOCOL_VERSION) {
				reason = "protocol version mismatch: prefill " + KVMessage.PROTOCOL_VERSION + ", decode "
						+ hello.protocolVersion();
			}
			else if (hello.stripes() < 1 || hello.stripes() > DecodeSpec.MAX_STRIPES) {
				reason = "stripes : " + hello.stripes() + " (expected: 1.." + DecodeSpec.MAX_STRIPES
						+ " connections per prefill rank)";
			}
			else {
				try {
					plan = TransferPlan.of(config.kvArgs(), config.layout(), hello.layout(), config.dsaCacheLayerSplit());
				}
				catch (TopologyException e) {
					reason = e.getMessage();
				}
			}
			if (reason != null) {
				String why = "prefill rank " + name + " rejected decode " + conn.remoteAddress() + ": " + reason;
				log.warn("[{}] {}", name, why);
				conn.send(new KVMessage.Reject(why), SendGate.OPEN, Sends.either(() -> conn.close(why)));
				return;
			}
			checksums = hello.checksums();
			long t = 0;
			synchronized (this) {
				if (closedBy == null && hello.stripes() > 1) {
					KVConnection[] all = new KVConnection[hello.stripes()];
					all[0] = conn;
					lanes = all;
					do {
						t = tokens.nextLong();
					}
					while (t == 0 || joining.putIfAbsent(t, this) != null);
					token = t;
				}
			}
			log.debug("[{}] decode {} registered over {} stripes: {}", name, conn.remoteAddress(), hello.stripes(),
					plan);
			conn.send(new KVMessage.HelloAck(ownLayout, t));
			String draining = table.drainReason();
			if (draining != null) {
				conn.send(new KVMessage.Draining(draining));
			}
		}

		/**
		 * One stripe closed: the others are closed too, and the session's rooms fail once the last one closed, when no
		 * queued block of theirs is read any more.
		 */
		void stripeClosed(KVConnection closed, CloseReason reason) {
			List<KVConnection> others = List.of();
			boolean last;
			CloseReason first;
			// What the session is counted lost to once the last stripe closed: silence if any stripe saw it.
			CloseReason counted;
			synchronized (this) {
				if (closedBy == null) {
					closedBy = reason;
					others = attached();
					joining.remove(token, this);
				}
				if (reason.kind() == CloseReason.Kind.SILENT_PEER) {
					silentBy = reason;
				}
				first = closedBy;
				last = --unclosed == 0;
				counted = silentBy != null ? silentBy : closedBy;
			}
			for (KVConnection c : others) {
				if (c != closed) {
					c.close("another stripe of the " + this + " closed: " + reason);
				}
			}
			if (!last) {
				return;
			}
			connectionClosed(counted);
			sessions.remove(this);
			for (PrefillRoom r : rooms) {
				table.fail(r, lostWith(first), "Lost connection with decode " + conn.remoteAddress() + ": " + first,
						false);
			}
			rooms.clear();
		}
	}
}
