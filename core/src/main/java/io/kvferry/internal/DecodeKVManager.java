package io.kvferry.internal;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import io.kvferry.HostPort;
import io.kvferry.KVFerryException;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.MemoryRegion;
import io.kvferry.ProtocolException;
import io.kvferry.RoomRequest;
import io.kvferry.bootstrap.BootstrapException;
import io.kvferry.bootstrap.PrefillParallelInfo;
import io.kvferry.spi.ConnectionHandler;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.PayloadSink;
import io.kvferry.topology.RankMapping;
import io.kvferry.topology.RankTarget;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.util.retry.Retry;

/**
 * The decode side: resolves prefill instances through their bootstrap server (once per instance), keeps one
 * connection per prefill rank (handshake = KV-args registration, once), sends each room's destinations, checks every
 * incoming write against the room's own pages, aux row and state slots, and declares Success when every required
 * prefill rank reported.
 */
final class DecodeKVManager extends BaseKVManager<DecodeKVManager.DecodeRoom> {

	private static final Logger log = LoggerFactory.getLogger(DecodeKVManager.class);
	// SGLang retries the parallel-info fetch at least 1 s apart, 15 times.
	private static final int PARALLEL_INFO_ATTEMPTS = 15;
	private static final Duration PARALLEL_INFO_DELAY = Duration.ofSeconds(1);

	private final ConcurrentHashMap<HostPort, Mono<PrefillParallelInfo>> instances = new ConcurrentHashMap<>();
	private final ConcurrentHashMap<SessionKey, Mono<Session>> sessions = new ConcurrentHashMap<>();
	private final Set<Session> open = ConcurrentHashMap.newKeySet();
	private final ConcurrentHashMap<Long, AbortWait> aborts = new ConcurrentHashMap<>();

	DecodeKVManager(KVManagerSpec spec) {
		super(spec);
	}

	@Override
	public HostPort endpoint() {
		return null;
	}

	@Override
	public KVSender sender(long room) {
		throw new IllegalStateException("sender() is for prefill managers; " + name + " is a decode manager");
	}

	@Override
	public Flux<RoomRequest> roomRequests() {
		return Flux.error(new IllegalStateException("roomRequests() is for prefill managers; " + name
				+ " is a decode manager"));
	}

	@Override
	public KVReceiver receiver(HostPort bootstrapAddr, long room, Integer prefillDpRank) {
		Objects.requireNonNull(bootstrapAddr, "bootstrapAddr");
		checkOpen();
		DecodeRoom fresh = new DecodeRoom(room, bootstrapAddr);
		DecodeRoom r = table.getOrCreate(room, id -> fresh);
		if (r != fresh) {
			throw new IllegalStateException("room " + room + (r == null ? " already ended on " : " already has a live receiver on ")
					+ name + "; rooms are not reused");
		}
		table.update(r, KVPoll.BOOTSTRAPPING, "", false);
		resolve(r, prefillDpRank).subscribe(resolved -> onResolved(r, resolved),
				e -> table.update(r, KVPoll.FAILED, "Could not bootstrap room " + room + " from " + bootstrapAddr
						+ ": " + describe(e), e instanceof BootstrapException));
		return new Receiver(r);
	}

	private Mono<Resolved> resolve(DecodeRoom r, Integer dpHint) {
		return parallelInfo(r.bootstrap).flatMap(info -> {
			RankMapping mapping = RankMapping.plan(info, spec.layout(), spec.kvArgs().engineRank(),
					spec.kvArgs().pageSize(), spec.kvArgs().isMla());
			int dp = RankMapping.prefillDpRank(r.id, dpHint, info.dpSize());
			return Flux.fromIterable(mapping.targets())
					.concatMap(t -> session(new SessionKey(r.bootstrap, dp, t.tpRank(), t.ppRank())))
					.collectList()
					.map(list -> new Resolved(mapping, list));
		});
	}

	private Mono<PrefillParallelInfo> parallelInfo(HostPort bootstrap) {
		return instances.computeIfAbsent(bootstrap, b -> spec.bootstrapClient().parallelInfo(b)
				.retryWhen(Retry.fixedDelay(PARALLEL_INFO_ATTEMPTS - 1, PARALLEL_INFO_DELAY)
						.filter(e -> e instanceof BootstrapException be && be.isRetryable())
						.scheduler(spec.timer())
						.onRetryExhaustedThrow((spec, signal) -> signal.failure()))
				.doOnError(e -> instances.remove(b))
				.cache(v -> Duration.ofMillis(Long.MAX_VALUE), e -> Duration.ZERO, () -> Duration.ZERO));
	}

	private Mono<Session> session(SessionKey key) {
		return sessions.computeIfAbsent(key, k -> spec.bootstrapClient()
				.rankEndpoint(k.bootstrap, k.dp, k.tp, k.pp)
				.flatMap(endpoint -> connect(k, endpoint))
				.doOnError(e -> sessions.remove(k))
				.cache(v -> Duration.ofMillis(Long.MAX_VALUE), e -> Duration.ZERO, () -> Duration.ZERO));
	}

	private Mono<Session> connect(SessionKey key, HostPort endpoint) {
		Session s = new Session(key, endpoint);
		return spec.transport().connect(endpoint, s).flatMap(conn -> {
			s.conn = conn;
			open.add(s);
			conn.send(new KVMessage.Hello(KVMessage.PROTOCOL_VERSION, ownLayout)).subscribe(null, e -> { });
			return s.handshake.asMono()
					.timeout(spec.handshakeTimeout(), Mono.error(() -> new ProtocolException("prefill rank "
							+ endpoint + " did not answer the handshake within " + spec.handshakeTimeout())),
							spec.timer())
					.doOnError(e -> conn.close(describe(e)))
					.thenReturn(s);
		});
	}

	private void onResolved(DecodeRoom r, Resolved resolved) {
		synchronized (r) {
			if (r.isTerminal()) {
				// Gave up while resolving: prefill ranks that already made a sender for the room must hear of it.
				if (!r.isRemoteFailure()) {
					for (Session s : new HashSet<>(resolved.sessions)) {
						s.conn.send(new KVMessage.Abort(r.id, r.reason())).subscribe(null, e -> { });
					}
				}
				return;
			}
			r.mapping = resolved.mapping;
			r.sessions = resolved.sessions;
			for (Session s : resolved.sessions) {
				s.rooms.add(r);
				if (!s.conn.isActive()) {
					table.update(r, KVPoll.FAILED, "Lost connection with prefill rank " + s.endpoint, false);
					return;
				}
			}
			table.update(r, KVPoll.WAITING_FOR_INPUT, "", false);
			if (r.pages != null) {
				sendRequests(r);
			}
		}
	}

	/** Sends the room's destinations to every target; the caller holds the room's monitor. */
	private void sendRequests(DecodeRoom r) {
		List<RankTarget> targets = r.mapping.targets();
		for (int i = 0; i < targets.size(); i++) {
			Session s = r.sessions.get(i);
			boolean dummy = targets.get(i).dummy();
			KVMessage.TransferRequest req = dummy
					? new KVMessage.TransferRequest(r.id, new int[0], -1, new int[0], r.mapping.requiredDstInfoNum(), true)
					: new KVMessage.TransferRequest(r.id, r.pages, r.auxIndex, r.stateSlots,
							r.mapping.requiredDstInfoNum(), false);
			s.conn.send(req).subscribe(null, e -> {
				// A send fails mostly because the connection went: say so as the connection's own loss does.
				String what = s.conn.isActive() ? "Failed to send room " + r.id + " to prefill rank " + s.endpoint
						: "Lost connection with prefill rank " + s.endpoint + " while sending room " + r.id;
				table.update(r, KVPoll.FAILED, what + ": " + describe(e), false);
			});
		}
	}

	@Override
	int connectionCount() {
		return open.size();
	}

	@Override
	Mono<Void> closeResources() {
		for (Session s : open) {
			s.conn.close("KV manager " + name + " closed");
		}
		return Mono.empty();
	}

	@Override
	void onTerminal(DecodeRoom r) {
		List<Session> targets;
		synchronized (r) {
			r.fenced = true;
			if (r.sessions == null) {
				return;
			}
			targets = new ArrayList<>(new HashSet<>(r.sessions));
		}
		for (Session s : targets) {
			s.rooms.remove(r);
		}
		if (r.state() == KVPoll.FAILED && !r.isRemoteFailure()) {
			r.abortAck = abortPeers(r, targets, r.reason());
		}
	}

	/** Tells a failed room's prefill ranks; completes when they acknowledged (then no byte can land any more). */
	private Mono<Void> abortPeers(DecodeRoom r, List<Session> targets, String reason) {
		AbortWait wait = new AbortWait(r.id, targets);
		aborts.put(r.id, wait);
		spec.timer().schedule(() -> {
			if (aborts.remove(r.id, wait)) {
				wait.done.tryEmitError(new KVFerryException("prefill did not acknowledge the abort of room " + r.id
						+ " within " + spec.handshakeTimeout() + "; its pages stay fenced"));
			}
		}, spec.handshakeTimeout().toNanos(), TimeUnit.NANOSECONDS);
		for (Session s : targets) {
			if (!s.conn.isActive()) {
				wait.acknowledged(s);
				continue;
			}
			s.conn.send(new KVMessage.Abort(r.id, reason)).subscribe(null, e -> wait.acknowledged(s));
		}
		return wait.done.asMono();
	}

	static final class DecodeRoom extends Room {
		final HostPort bootstrap;
		// Guarded by this.
		RankMapping mapping;
		List<Session> sessions;
		int[] pages;
		int auxIndex = -1;
		int[] stateSlots;
		WriteGrant grant;
		final Set<Integer> responders = new HashSet<>();
		boolean transferring;
		volatile boolean fenced;
		volatile Mono<Void> abortAck = Mono.empty();

		DecodeRoom(long id, HostPort bootstrap) {
			super(id);
			this.bootstrap = bootstrap;
		}

		boolean acceptsBytes() {
			return !fenced && isLive();
		}
	}

	private record SessionKey(HostPort bootstrap, int dp, int tp, int pp) {
	}

	private record Resolved(RankMapping mapping, List<Session> sessions) {
	}

	private final class AbortWait {
		final long room;
		final Set<Session> waiting = ConcurrentHashMap.newKeySet();
		final Sinks.Empty<Void> done = Sinks.empty();

		AbortWait(long room, List<Session> targets) {
			this.room = room;
			waiting.addAll(targets);
		}

		void acknowledged(Session s) {
			if (waiting.remove(s) && waiting.isEmpty()) {
				aborts.remove(room, this);
				done.tryEmitEmpty();
			}
		}
	}

	private final class Receiver extends RoomHandle<DecodeRoom> implements KVReceiver {

		Receiver(DecodeRoom room) {
			super(room, spec.callbackScheduler());
		}

		@Override
		public void sendMetadata(int[] pageIndices, int auxIndex, int[] stateIndices) {
			int[] pages = pageIndices.clone();
			int[] states = stateIndices.clone();
			checkIndices("page index", pages, spec.kvArgs().kvRegions());
			checkIndices("state index", states, spec.kvArgs().stateRegions());
			if (auxIndex != -1) {
				checkIndices("auxIndex", new int[] { auxIndex }, spec.kvArgs().auxRegions());
			}
			WriteGrant grant = WriteGrant.of(spec.kvArgs(), pages, auxIndex, states);
			synchronized (room) {
				if (room.pages != null) {
					throw new IllegalStateException("room " + room.id + ": sendMetadata called twice");
				}
				room.pages = pages;
				room.auxIndex = auxIndex;
				room.stateSlots = states;
				room.grant = grant;
				if (room.mapping != null && !room.isTerminal()) {
					sendRequests(room);
				}
			}
		}

		@Override
		public Mono<Void> abort(String reason) {
			table.update(room, KVPoll.FAILED, abortReason(reason), false);
			return room.abortAck;
		}

		private void checkIndices(String what, int[] indices, List<MemoryRegion> regions) {
			if (indices.length == 0) {
				return;
			}
			if (regions.isEmpty()) {
				throw new IllegalArgumentException(what + " given but this rank registered no such buffers");
			}
			long items = regions.stream().mapToLong(MemoryRegion::itemCount).min().orElse(0);
			for (int i : indices) {
				if (i < 0 || i >= items) {
					throw new IllegalArgumentException(what + " : " + i + " (expected: 0.." + (items - 1) + ")");
				}
			}
		}
	}

	/** One prefill rank's connection. */
	private final class Session implements ConnectionHandler {

		final SessionKey key;
		final HostPort endpoint;
		final Set<DecodeRoom> rooms = ConcurrentHashMap.newKeySet();
		final Sinks.Empty<Void> handshake = Sinks.empty();
		volatile KVConnection conn;

		Session(SessionKey key, HostPort endpoint) {
			this.key = key;
			this.endpoint = endpoint;
		}

		@Override
		public void onMessage(KVConnection c, KVMessage message) {
			if (message instanceof KVMessage.HelloAck) {
				handshake.tryEmitEmpty();
			}
			else if (message instanceof KVMessage.Reject reject) {
				handshake.tryEmitError(new ProtocolException(reject.reason()));
			}
			else if (message instanceof KVMessage.Status status) {
				onStatus(status);
			}
			else if (message instanceof KVMessage.AbortAck ack) {
				AbortWait w = aborts.get(ack.room());
				if (w != null) {
					w.acknowledged(this);
				}
			}
			else {
				c.close("unexpected " + message.getClass().getSimpleName() + " from prefill");
			}
		}

		private void onStatus(KVMessage.Status status) {
			DecodeRoom r = table.get(status.room());
			if (r == null) {
				return;
			}
			synchronized (r) {
				if (r.sessions == null || !r.sessions.contains(this)) {
					log.warn("[{}] prefill {} reported room {} it does not serve; ignored", name, endpoint, r.id);
					return;
				}
				if (status.status() == KVPoll.FAILED) {
					table.update(r, KVPoll.FAILED, "Prefill rank " + endpoint + " failed room " + r.id + ": "
							+ status.reason(), true);
				}
				else if (status.status() == KVPoll.SUCCESS) {
					r.responders.add(status.prefillRank());
					if (r.responders.size() >= r.mapping.requiredPrefillResponseNum()) {
						table.update(r, KVPoll.SUCCESS, "", false);
					}
				}
			}
		}

		@Override
		public PayloadSink onData(KVConnection c, DataHeader h) {
			DecodeRoom r = table.get(h.room());
			if (r == null || !r.acceptsBytes()) {
				return null;
			}
			long destination;
			synchronized (r) {
				try {
					if (r.grant == null || !r.sessions.contains(this)) {
						throw new WriteGrant.Refused("the room asked this prefill rank for nothing");
					}
					destination = r.grant.destination(h);
				}
				catch (WriteGrant.Refused refused) {
					table.update(r, KVPoll.FAILED, "prefill rank " + endpoint + " wrote outside room " + r.id + ": "
							+ refused.getMessage(), false);
					return null;
				}
				if (!r.transferring) {
					r.transferring = true;
					table.update(r, KVPoll.TRANSFERRING, "", false);
				}
			}
			return new PayloadWriter(destination, h, r::acceptsBytes, () -> bytesReceived.add(h.payloadLength()));
		}

		@Override
		public boolean isSendable(long room) {
			return true;
		}

		@Override
		public void onClose(KVConnection c, String reason) {
			open.remove(this);
			connectionClosed(reason);
			sessions.remove(key);
			handshake.tryEmitError(new ProtocolException("connection to prefill rank " + endpoint + " closed: "
					+ reason));
			for (AbortWait w : aborts.values()) {
				w.acknowledged(this);
			}
			for (DecodeRoom r : rooms) {
				table.update(r, KVPoll.FAILED, "Lost connection with prefill rank " + endpoint + ": " + reason, false);
			}
			rooms.clear();
		}
	}
}
