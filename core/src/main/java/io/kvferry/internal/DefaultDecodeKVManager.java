package io.kvferry.internal;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import io.kvferry.HostPort;
import io.kvferry.DecodeKVManager;
import io.kvferry.FailureCause;
import io.kvferry.KVManagerConfig;
import io.kvferry.KVPoll;
import io.kvferry.KVFerryException;
import io.kvferry.KVReceiver;
import io.kvferry.MemoryRegion;
import io.kvferry.ParallelLayout;
import io.kvferry.ProtocolException;
import io.kvferry.DisaggregationMode;
import io.kvferry.RoomTrace;
import io.kvferry.TopologyException;
import io.kvferry.bootstrap.BootstrapException;
import io.kvferry.bootstrap.PrefillParallelInfo;
import io.kvferry.bootstrap.RegistryChange;
import io.kvferry.spi.CloseReason;
import io.kvferry.spi.ConnectionHandler;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.PayloadSink;
import io.kvferry.spi.SendGate;
import io.kvferry.spi.PeerLayout;
import io.kvferry.spi.RegionKind;
import io.kvferry.internal.topology.RankMapping;
import io.kvferry.internal.topology.RankTarget;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.util.retry.Retry;

/**
 * The decode side: resolves prefill instances through their bootstrap server (once per instance), keeps one
 * connection per prefill rank (handshake = KV-args registration, once, checked against the layout the bootstrap server
 * described), sends each room's destinations, checks every incoming write against the room's own pages, aux row and
 * state slots, and declares Success when every required prefill rank reported it with exactly the bytes that landed.
 *
 * <p>A room's pages are released (safe to reuse) once no byte can land in them any more: at Success, or after a
 * failure once every prefill rank that was asked to write for the room acknowledged the abort, reported the room
 * ended, or lost its connection.
 *
 * <p>Each prefill rank is reached over {@link KVManagerConfig#stripes()} connections (stripes), each read on its own
 * thread: the room's bytes arrive on all of them at once. A rank's Success arrives on stripe 0 and is judged only once
 * every other stripe's fence for the room arrived (so all the room's bytes landed), and an abort is acknowledged only
 * when every stripe acknowledged it or the rank's stripes all closed.
 */
final class DefaultDecodeKVManager extends BaseKVManager<DefaultDecodeKVManager.DecodeRoom> implements DecodeKVManager {

	private static final Logger log = LoggerFactory.getLogger(DefaultDecodeKVManager.class);
	// SGLang retries the parallel-info fetch at least 1 s apart, 15 times.
	private static final int PARALLEL_INFO_ATTEMPTS = 15;
	private static final Duration PARALLEL_INFO_DELAY = Duration.ofSeconds(1);

	private final ConcurrentHashMap<HostPort, Mono<PrefillParallelInfo>> instances = new ConcurrentHashMap<>();
	private final ConcurrentHashMap<SessionKey, Mono<Session>> sessions = new ConcurrentHashMap<>();
	// The last resolution of each prefill instance, per DP group: see Routes.
	private final Routes routes = new Routes();
	private final Set<Session> open = ConcurrentHashMap.newKeySet();
	private final ConcurrentHashMap<Long, AbortWait> aborts = new ConcurrentHashMap<>();
	// Prefill ranks that announced a drain, with the reason: once such a rank is gone, a room that cannot reach it
	// fails because it drained, not with a bare "connection refused". One entry per rank endpoint, replaced by its next
	// drain; entries are small and ranks few.
	private final ConcurrentHashMap<HostPort, String> drained = new ConcurrentHashMap<>();

	private final Disposable registryWatch;
	private final LayerRegions ownLayers;

	DefaultDecodeKVManager(KVManagerConfig config) {
		super(config);
		this.ownLayers = LayerRegions.of(config.kvArgs().kvRegions().size(), config.kvArgs().draftLayers(),
				config.kvArgs().isMla());
		this.registryWatch = config.bootstrapClient().changes().subscribe(this::onRegistryChange,
				e -> log.warn("[{}] the registry stopped reporting changes ({}); cached prefill instances are kept "
						+ "until a handshake shows them stale", name, describe(e)));
	}

	/** What a registry reports stale is forgotten at once; connections to a rank that left or moved are closed. */
	private void onRegistryChange(RegistryChange change) {
		SessionKey key = new SessionKey(change.bootstrap(), change.dpGroup(), 0, change.tpRank(), change.ppRank());
		if (change.kind() == RegistryChange.Kind.RANK_REMOVED
				&& open.stream().anyMatch(s -> s.key.sameRankAs(key) && s.draining != null)) {
			// A draining rank left on purpose: it finishes the rooms it holds, and its connection keeps refusing new
			// ones with its reason (rather than decode retrying an instance that is going away) until it closes.
			log.debug("[{}] draining prefill rank dp {} tp {} pp {} of {} left the registry", name, key.dp, key.tp,
					key.pp, key.bootstrap);
			return;
		}
		forgetInstance(change.bootstrap());
		if (change.kind() == RegistryChange.Kind.INSTANCE_CHANGED) {
			return;
		}
		for (Session s : open) {
			if (s.key.sameRankAs(key)) {
				s.close("prefill rank dp " + key.dp + " tp " + key.tp + " pp " + key.pp + " of " + key.bootstrap
						+ (change.kind() == RegistryChange.Kind.RANK_REMOVED ? " left the registry"
								: " registered another endpoint"));
			}
		}
	}

	@Override
	public KVReceiver receiver(HostPort bootstrapAddr, long room) {
		return open(bootstrapAddr, room, null);
	}

	@Override
	public KVReceiver receiver(HostPort bootstrapAddr, long room, int prefillDpRank) {
		if (prefillDpRank < 0) {
			throw new IllegalArgumentException("prefillDpRank : " + prefillDpRank + " (expected: >= 0)");
		}
		return open(bootstrapAddr, room, prefillDpRank);
	}

	private KVReceiver open(HostPort bootstrapAddr, long room, Integer prefillDpRank) {
		Objects.requireNonNull(bootstrapAddr, "bootstrapAddr");
		checkOpen();
		DecodeRoom fresh = new DecodeRoom(room, bootstrapAddr, ownLayers);
		DecodeRoom r = table.getOrCreate(room, id -> fresh);
		String draining = table.drainReason();
		if (r == null && draining != null && !table.isTombstoned(room)) {
			// Born failed, so that the engine frees the room's pages (and may route it elsewhere) at once.
			fresh.trace = traceNow(DisaggregationMode.DECODE, room, "", epochNanos());
			table.advance(fresh, KVPoll.BOOTSTRAPPING);
			table.fail(fresh, FailureCause.DRAINING, draining, false);
			return new Receiver(fresh);
		}
		if (r != fresh) {
			throw new IllegalStateException("room " + room + (r == null ? " already ended on " : " already has a live receiver on ")
					+ name + "; rooms are not reused");
		}
		r.trace = traceNow(DisaggregationMode.DECODE, room, "", epochNanos());
		table.advance(r, KVPoll.BOOTSTRAPPING);
		Resolved known = routes.current(r.bootstrap, room, prefillDpRank);
		if (known != null) {
			// The common case: straight to the request on this thread, without assembling and subscribing a chain.
			r.trace.event(RoomTrace.Event.BOOTSTRAP_RESOLVED, 0);
			r.trace.event(RoomTrace.Event.HANDSHAKE_DONE, known.sessions.size());
			onResolved(r, known);
			return new Receiver(r);
		}
		resolve(r, prefillDpRank).subscribe(resolved -> onResolved(r, resolved),
				e -> table.fail(r, e instanceof TopologyException ? FailureCause.INCOMPATIBLE
						: e instanceof DrainedRankException ? FailureCause.DRAINING : FailureCause.BOOTSTRAP,
						"Could not bootstrap room " + room + " from " + bootstrapAddr + ": " + describe(e),
						e instanceof BootstrapException || e instanceof DrainedRankException));
		return new Receiver(r);
	}

	private Mono<Resolved> resolve(DecodeRoom r, Integer dpHint) {
		Mono<PrefillParallelInfo> instance = parallelInfo(r.bootstrap);
		return instance.flatMap(info -> {
			r.trace.event(RoomTrace.Event.BOOTSTRAP_RESOLVED, 0);
			RankMapping mapping = RankMapping.plan(info, config.layout(), config.kvArgs().engineRank(),
					config.kvArgs().pageSize(), config.kvArgs().isMla());
			int dp = RankMapping.prefillDpRank(r.id, dpHint, info.dpSize());
			return sessions(r, mapping, dp, info).flatMap(list -> {
				// CP rank 0's handshake tells whether every CP rank sends a share: then ask them all.
				PeerLayout first = list.get(0).prefill;
				if (!first.transfersFromAllCpRanks()) {
					return Mono.just(new Resolved(mapping, list));
				}
				RankMapping all = mapping.spreadOverCp(first.parallel().attnCpSize());
				return sessions(r, all, dp, info).map(l -> {
					for (Session s : l) {
						// A CP rank that does not send its share would leave the room waiting for its Success.
						if (s.prefill.allCpRanksTransfer() != first.allCpRanksTransfer()
								|| s.prefill.dsaCacheLayerSplit() != first.dsaCacheLayerSplit()) {
							throw new TopologyException("prefill CP rank " + s.prefill.parallel().attnCpRank() + " ("
									+ s.endpoint + ") has allCpRanksTransfer=" + s.prefill.allCpRanksTransfer()
									+ " dsaCacheLayerSplit=" + s.prefill.dsaCacheLayerSplit() + ", but CP rank 0 has "
									+ first.allCpRanksTransfer() + "/" + first.dsaCacheLayerSplit()
									+ " (expected: the same on every CP rank of an instance)");
						}
					}
					return new Resolved(all, l);
				});
			}).doOnNext(resolved -> {
				routes.remember(r.bootstrap, instance, info, dp, resolved);
				r.trace.event(RoomTrace.Event.HANDSHAKE_DONE, resolved.sessions.size());
			});
		});
	}

	private Mono<List<Session>> sessions(DecodeRoom r, RankMapping mapping, int dp, PrefillParallelInfo info) {
		return Flux.fromIterable(mapping.targets())
				.concatMap(t -> session(new SessionKey(r.bootstrap, dp, t.cpRank(), t.tpRank(), t.ppRank()), info))
				.collectList();
	}

	private Mono<PrefillParallelInfo> parallelInfo(HostPort bootstrap) {
		return instances.computeIfAbsent(bootstrap, b -> config.bootstrapClient().parallelInfo(b)
				.switchIfEmpty(Mono.error(() -> new BootstrapException(BootstrapException.Kind.OTHER, 0,
						"the bootstrap client answered nothing for the parallel info of " + b)))
				.retryWhen(Retry.fixedDelay(PARALLEL_INFO_ATTEMPTS - 1, PARALLEL_INFO_DELAY)
						.filter(e -> e instanceof BootstrapException be && be.isRetryable())
						.scheduler(config.timer())
						// Rooms wait meanwhile: say why, or a room that times out in Bootstrapping names no cause.
						.doBeforeRetry(signal -> log.warn("[{}] parallel info of {}: attempt {}/{} failed, retrying in {} "
								+ "ms: {}", name, b, signal.totalRetries() + 1, PARALLEL_INFO_ATTEMPTS,
								PARALLEL_INFO_DELAY.toMillis(), describe(signal.failure())))
						.onRetryExhaustedThrow((spec, signal) -> signal.failure()))
				.doOnError(e -> instances.remove(b))
				.cache(v -> Duration.ofMillis(Long.MAX_VALUE), e -> Duration.ZERO, () -> Duration.ZERO));
	}

	/** Forgets an instance's sizes (they no longer match its ranks), so that the next room fetches them again. */
	private void forgetInstance(HostPort bootstrap) {
		instances.remove(bootstrap);
		routes.forget(bootstrap);
	}

	private Mono<Session> session(SessionKey key, PrefillParallelInfo info) {
		return sessions.computeIfAbsent(key, k -> {
			// The entry this call creates: only it may be removed by its own session's end, never a newer one.
			AtomicReference<Mono<Session>> entry = new AtomicReference<>();
			Mono<Session> mono = config.bootstrapClient()
					.rankEndpoint(k.bootstrap, k.dp, k.cp, k.tp, k.pp)
					// An answer without an endpoint must fail the rooms, not leave them waiting for their timeout.
					.switchIfEmpty(Mono.error(() -> new BootstrapException(BootstrapException.Kind.OTHER, 0,
							"the bootstrap client answered nothing for prefill rank dp " + k.dp + " cp " + k.cp + " tp "
									+ k.tp + " pp " + k.pp + " of " + k.bootstrap)))
					.flatMap(endpoint -> connect(k, endpoint, info, entry.get()))
					.doOnError(e -> sessions.remove(k, entry.get()))
					.cache(v -> Duration.ofMillis(Long.MAX_VALUE), e -> Duration.ZERO, () -> Duration.ZERO);
			entry.set(mono);
			return mono;
		});
	}

	private Mono<Session> connect(SessionKey key, HostPort endpoint, PrefillParallelInfo info, Mono<Session> entry) {
		Session s = new Session(key, endpoint, info, entry, config.stripes());
		Duration limit = config.handshakeTimeout();
		return config.transport().connect(endpoint, s.lanes[0]).onErrorMap(e -> {
			// A rank that said it drains and then went away is not an unexplained connection failure.
			String reason = drained.get(endpoint);
			return reason == null ? e : new DrainedRankException("prefill rank " + endpoint + " drained (" + reason
					+ ") and is gone: " + describe(e), e);
		}).switchIfEmpty(Mono.error(() -> new ProtocolException("the transport ended the connect to prefill rank "
				+ endpoint + " without a connection"))).flatMap(conn -> {
			drained.remove(endpoint);
			s.conn = conn;
			open.add(s);
			if (!s.attach(s.lanes[0], conn)) {
				open.remove(s);
				return Mono.error(new ProtocolException("connection to prefill rank " + endpoint + " closed at once"));
			}
			conn.send(new KVMessage.Hello(KVMessage.PROTOCOL_VERSION, ownLayout, config.checksums(), s.lanes.length),
					SendGate.OPEN, Sends.ifFailed(e -> conn.close("could not send the handshake: " + describe(e))));
			return s.handshake.asMono().then(Mono.defer(() -> joinStripes(s)));
		})
				// One deadline on this manager's timer for the connect, the handshake and the stripes: the transport's
				// own connect and handshake timers run on the event loop that makes the connection, so a loop that
				// never gets to it would hold the session, and every room waiting on it, until the rooms' timeout.
				.timeout(limit, Mono.error(() -> new ProtocolException("prefill rank " + endpoint + " " + s.stalledAt()
						+ " within " + limit)), config.timer())
				.doOnError(e -> s.close(describe(e)))
				.thenReturn(s);
	}

	/** Opens the session's further stripes, each joining with the token of stripe 0's handshake. */
	private Mono<Void> joinStripes(Session s) {
		if (s.lanes.length == 1) {
			return Mono.empty();
		}
		return Flux.range(1, s.lanes.length - 1)
				.flatMap(i -> config.transport().connect(s.endpoint, s.lanes[i]).flatMap(conn -> {
					if (!s.attach(s.lanes[i], conn)) {
						return Mono.error(new ProtocolException("connection to prefill rank " + s.endpoint
								+ " closed while its stripes joined"));
					}
					conn.send(new KVMessage.Join(s.token, i), SendGate.OPEN,
							Sends.ifFailed(e -> conn.close("could not send the join of stripe " + i + ": "
									+ describe(e))));
					return s.lanes[i].joined.asMono();
				}))
				.then();
	}

	private void onResolved(DecodeRoom r, Resolved resolved) {
		// User code: read before the room's monitor is taken.
		String traceContext = r.trace.context();
		synchronized (r) {
			if (r.isTerminal()) {
				// Gave up while resolving: prefill ranks that already made a sender for the room must hear of it.
				for (Session s : new LinkedHashSet<>(resolved.sessions)) {
					s.sendAbort(r.id, r.reason());
				}
				return;
			}
			r.mapping = resolved.mapping;
			r.sessions = resolved.sessions;
			for (Session s : resolved.sessions) {
				s.rooms.add(r);
				if (!s.isUsable()) {
					// A session can outlive its connection by a moment; a rank that said it drains went on purpose.
					String drainedReason = s.draining;
					if (drainedReason != null) {
						table.fail(r, FailureCause.DRAINING, "prefill rank " + s.endpoint + " drained ("
								+ drainedReason + ") and is gone: its connection closed", true);
					}
					else {
						table.fail(r, FailureCause.CONNECTION_LOST, "Lost connection with prefill rank " + s.endpoint,
								false);
					}
					return;
				}
				String draining = s.draining;
				if (draining != null) {
					// Asking would only get the refusal back: the rank admits no new rooms.
					table.fail(r, FailureCause.DRAINING, "Prefill rank " + s.endpoint + " refused room " + r.id
							+ ": " + draining, true);
					return;
				}
			}
			table.advance(r, KVPoll.WAITING_FOR_INPUT);
			if (r.pages != null) {
				sendRequests(r, traceContext);
			}
		}
	}

	/**
	 * Opens the room's ledger, then sends the room's destinations to every target; the caller holds the room's
	 * monitor.
	 */
	private void sendRequests(DecodeRoom r, String traceContext) {
		List<RankTarget> targets = r.mapping.targets();
		try {
			r.ledger = RoomPlan.ledger(config.kvArgs(), ownLayout, r.pages, r.auxIndex, StateLists.perRegion(
					config.kvArgs().stateKinds(), config.kvArgs().stateRegions().size(), r.stateSlots), sources(r));
		}
		catch (RuntimeException e) {
			// The handshakes passed, so the ranks can pair; should the plan still not add up, no byte may be asked for.
			table.fail(r, FailureCause.INCOMPATIBLE, "room " + r.id + ": " + describe(e), false);
			return;
		}
		r.layers.expect(r.ledger);
		for (int i = 0; i < targets.size(); i++) {
			Session s = r.sessions.get(i);
			boolean dummy = targets.get(i).dummy();
			KVMessage.TransferRequest req = dummy
					? new KVMessage.TransferRequest(r.id, new int[0], -1, new int[0], r.mapping.requiredDstInfoNum(), true,
							traceContext)
					: new KVMessage.TransferRequest(r.id, r.pages, r.auxIndex, StateLists.flatten(r.stateSlots),
							r.mapping.requiredDstInfoNum(), false, traceContext, r.prefixLen,
							StateLists.counts(config.kvArgs().stateKinds(), r.stateSlots));
			if (!dummy) {
				// From here on this rank may write the room's pages: a failure must wait for it before release.
				r.writers.add(s);
			}
			s.conn.send(req, SendGate.OPEN, Sends.ifFailed(e -> {
				// A send fails mostly because the connection went: say so as the connection's own loss does.
				if (!s.conn.isActive()) {
					s.lost(r, "Lost connection with prefill rank " + s.endpoint + " while sending room " + r.id + ": "
							+ describe(e), FailureCause.CONNECTION_LOST);
					return;
				}
				table.fail(r, FailureCause.OTHER, "Failed to send room " + r.id + " to prefill rank " + s.endpoint
						+ ": " + describe(e), false);
			}));
		}
		r.trace.event(RoomTrace.Event.REQUEST_SENT, r.pages.length);
	}

	/** @return the layouts of the prefill ranks that write the room (not MLA's dummy ranks), with their CP ranks */
	private List<RoomPlan.Source> sources(DecodeRoom r) {
		List<RoomPlan.Source> sources = new ArrayList<>();
		List<RankTarget> targets = r.mapping.targets();
		for (int i = 0; i < targets.size(); i++) {
			if (!targets.get(i).dummy()) {
				sources.add(new RoomPlan.Source(r.sessions.get(i).prefill, targets.get(i).cpRank()));
			}
		}
		return sources;
	}

	@Override
	int connectionCount() {
		return open.size();
	}

	@Override
	Mono<Void> closeResources() {
		registryWatch.dispose();
		List<Mono<Void>> closed = new ArrayList<>();
		for (Session s : open) {
			for (KVConnection c : s.attached()) {
				c.close("KV manager " + name + " closed");
				closed.add(c.onClose());
			}
		}
		return Mono.when(closed);
	}

	@Override
	void onTerminal(DecodeRoom r) {
		r.layers.end(r.state() == KVPoll.SUCCESS);
		Set<Session> targets;
		Set<Session> pending = new HashSet<>();
		synchronized (r) {
			r.fenced = true;
			targets = r.sessions == null ? new LinkedHashSet<>() : new LinkedHashSet<>(r.sessions);
			if (r.state() == KVPoll.FAILED) {
				targets.removeAll(r.finished);
				for (Session s : r.writers) {
					if (!r.finished.contains(s)) {
						pending.add(s);
					}
				}
			}
		}
		for (Session s : targets) {
			s.rooms.remove(r);
		}
		if (r.state() != KVPoll.FAILED) {
			r.released.tryEmitEmpty();
			return;
		}
		AbortWait wait = new AbortWait(r, pending);
		if (!pending.isEmpty()) {
			aborts.put(r.id, wait);
			config.timer().schedule(wait::expire, config.handshakeTimeout().toNanos(), TimeUnit.NANOSECONDS);
		}
		for (Session s : targets) {
			if (!s.sendAbort(r.id, r.reason())) {
				wait.acknowledged(s.lanes);
			}
		}
		wait.checkDone();
	}

	static final class DecodeRoom extends Room {
		final HostPort bootstrap;
		// Completes once no byte can land in the room's pages any more.
		final Sinks.Empty<Void> released = Sinks.empty();
		// Guarded by this.
		RankMapping mapping;
		List<Session> sessions;
		int[] pages;
		int auxIndex = -1;
		int[][] stateSlots;
		int prefixLen;
		// The grant and ledger: set with the requests, before any byte can land.
		GrantLedger ledger;
		final Set<Session> writers = new HashSet<>();
		final Set<Session> finished = new HashSet<>();
		// What landed per stripe, and the fences and Successes that report what was sent.
		final Map<Lane, Tally> tallies = new HashMap<>();
		final Map<Lane, KVMessage.Fence> fences = new HashMap<>();
		final Map<Session, KVMessage.Status> successes = new HashMap<>();
		final Set<Integer> responders = new HashSet<>();
		boolean transferring;
		volatile boolean fenced;
		final LayerLanding layers;

		DecodeRoom(long id, HostPort bootstrap, LayerRegions ownLayers) {
			super(id);
			this.bootstrap = bootstrap;
			this.layers = new LayerLanding(ownLayers, this::acceptsBytes);
		}

		boolean acceptsBytes() {
			return !fenced && isLive();
		}
	}

	private record SessionKey(HostPort bootstrap, int dp, int cp, int tp, int pp) {

		/** A registry names ranks without their CP rank: a change to a rank concerns each of its CP ranks. */
		boolean sameRankAs(SessionKey other) {
			return bootstrap.equals(other.bootstrap) && dp == other.dp && tp == other.tp && pp == other.pp;
		}
	}

	private record Resolved(RankMapping mapping, List<Session> sessions) {
	}

	/**
	 * What {@link #resolve} found for each prefill instance and DP group, reused by later rooms while it is exactly what
	 * resolving again would give: the instance's cached sizes are still the ones it was planned with, and every session
	 * is still open, i.e. the one cached for its rank. A forgotten instance or a closed session takes the full path, which fetches
	 * and connects anew; a session whose connection is closing or that drains is still the cached one, and
	 * {@link #onResolved} fails the room for it either way.
	 */
	private final class Routes {

		private final ConcurrentHashMap<HostPort, Route> byInstance = new ConcurrentHashMap<>();

		/** @return the resolution a room of this instance may reuse, or null when it must resolve */
		Resolved current(HostPort bootstrap, long room, Integer dpHint) {
			Route route = byInstance.get(bootstrap);
			if (route == null || instances.get(bootstrap) != route.instance) {
				return null;
			}
			if (dpHint != null && (dpHint < 0 || dpHint >= route.info.dpSize())) {
				// Resolving names the rule this hint breaks.
				return null;
			}
			Resolved resolved = route.byDp.get(RankMapping.prefillDpRank(room, dpHint, route.info.dpSize()));
			if (resolved == null) {
				return null;
			}
			for (Session s : resolved.sessions) {
				// A session leaves the session table when its first stripe closes and the open set when its last one
				// does: either way it is no longer the one to ask, and resolving again connects anew.
				if (!open.contains(s) || sessions.get(s.key) != s.entry) {
					return null;
				}
			}
			return resolved;
		}

		void remember(HostPort bootstrap, Mono<PrefillParallelInfo> instance, PrefillParallelInfo info, int dp,
				Resolved resolved) {
			Route route = byInstance.compute(bootstrap, (b, old) -> old != null && old.instance == instance ? old
					: new Route(instance, info, new ConcurrentHashMap<>()));
			route.byDp.put(dp, resolved);
		}

		void forget(HostPort bootstrap) {
			byInstance.remove(bootstrap);
		}
	}

	private record Route(Mono<PrefillParallelInfo> instance, PrefillParallelInfo info,
			ConcurrentHashMap<Integer, Resolved> byDp) {
	}

	/** {@code lane} carries nothing more of {@code room}, if the room waits on an abort. */
	private void acknowledgeAbort(long room, Lane lane) {
		AbortWait w = aborts.get(room);
		if (w != null) {
			w.acknowledged(lane);
		}
	}

	/** A failed room's prefill ranks that may still write it, until each acknowledged or its connection closed. */
	private final class AbortWait {
		final DecodeRoom room;
		// Every stripe of each such rank: each must say that it carries nothing more of the room.
		final Set<Lane> waiting = ConcurrentHashMap.newKeySet();

		AbortWait(DecodeRoom room, Set<Session> pending) {
			this.room = room;
			for (Session s : pending) {
				waiting.addAll(List.of(s.lanes));
			}
		}

		void acknowledged(Lane... lanes) {
			boolean removed = false;
			for (Lane l : lanes) {
				removed |= waiting.remove(l);
			}
			if (removed) {
				checkDone();
			}
		}

		void checkDone() {
			if (waiting.isEmpty()) {
				aborts.remove(room.id, this);
				room.released.tryEmitEmpty();
			}
		}

		/** A rank that does not acknowledge may still write: closing its connection is what guarantees it stopped. */
		void expire() {
			for (Lane l : waiting) {
				l.session.close("prefill rank " + l.session.endpoint + " did not acknowledge the abort of room "
						+ room.id + " on stripe " + l.index + " within " + config.handshakeTimeout()
						+ "; closing so that no byte of the room can land");
			}
		}
	}

	private final class Receiver extends RoomHandle<DecodeRoom> implements KVReceiver {

		Receiver(DecodeRoom room) {
			super(room, config.callbackScheduler());
		}

		@Override
		public Mono<Void> completion() {
			// A failed room errors only once its pages are released, so that freeing them on the error is safe.
			return room.states(callbacks).last().flatMap(s -> s == KVPoll.SUCCESS ? Mono.<Void>empty()
					: room.released.asMono().then(Mono.<Void>error(room.failure())).publishOn(callbacks));
		}

		@Override
		public void sendMetadata(int[] pageIndices, int auxIndex, int[] stateIndices) {
			sendMetadata(0, pageIndices, auxIndex, new int[][] { stateIndices });
		}

		@Override
		public void sendMetadata(int decodePrefixLen, int[] pageIndices, int auxIndex, int[][] stateIndices) {
			int pageSize = config.kvArgs().pageSize();
			if (decodePrefixLen < 0 || decodePrefixLen % pageSize != 0) {
				throw new IllegalArgumentException("decodePrefixLen : " + decodePrefixLen + " (expected: >= 0 and a "
						+ "multiple of page_size " + pageSize + ": decode holds whole pages of the prefix)");
			}
			int[] pages = pageIndices.clone();
			List<MemoryRegion> stateRegions = config.kvArgs().stateRegions();
			int[][] states = StateLists.check(config.kvArgs().stateKinds(), stateRegions.size(), stateIndices);
			int[][] perRegion = StateLists.perRegion(config.kvArgs().stateKinds(), stateRegions.size(), states);
			checkIndices("page index", pages, config.kvArgs().kvRegions());
			for (int i = 0; i < perRegion.length; i++) {
				checkIndices("state index", perRegion[i], List.of(stateRegions.get(i)));
			}
			if (auxIndex != -1) {
				checkIndices("auxIndex", new int[] { auxIndex }, config.kvArgs().auxRegions());
			}
			// User code: read before the room's monitor is taken.
			String traceContext = room.trace.context();
			synchronized (room) {
				if (room.pages != null) {
					throw new IllegalStateException("room " + room.id + ": sendMetadata called twice");
				}
				room.pages = pages;
				room.auxIndex = auxIndex;
				room.stateSlots = states;
				room.prefixLen = decodePrefixLen;
				if (room.mapping != null && !room.isTerminal()) {
					sendRequests(room, traceContext);
				}
			}
		}

		@Override
		public Mono<Void> abort(String reason) {
			table.fail(room, FailureCause.ABORTED, abortReason(reason), false);
			return room.released.asMono().publishOn(callbacks);
		}

		@Override
		public Flux<Integer> layers() {
			return room.layers.flux(callbacks);
		}

		private void checkIndices(String what, int[] indices, List<MemoryRegion> regions) {
			if (indices.length == 0) {
				return;
			}
			if (regions.isEmpty()) {
				throw new IllegalArgumentException(what + " given but this rank registered no such buffers");
			}
			long items = Long.MAX_VALUE;
			for (MemoryRegion r : regions) {
				items = Math.min(items, r.itemCount());
			}
			for (int i : indices) {
				if (i < 0 || i >= items) {
					throw new IllegalArgumentException(what + " : " + i + " (expected: 0.." + (items - 1) + ")");
				}
			}
			int[] sorted = indices.clone();
			Arrays.sort(sorted);
			for (int i = 1; i < sorted.length; i++) {
				if (sorted[i] == sorted[i - 1]) {
					// Two positions would land in one item: one of them would overwrite the other.
					throw new IllegalArgumentException(what + " " + sorted[i] + " listed twice (expected: distinct)");
				}
			}
		}
	}

	/**
	 * One connection of a session. Stripe 0 carries the handshake and the control messages; every stripe carries
	 * bytes, and the fences and abort acknowledgements that say a room's bytes on it are over.
	 */
	private final class Lane implements ConnectionHandler {

		final Session session;
		final int index;
		// Completes when prefill attached this stripe to the session (stripe 0: at once).
		final Sinks.Empty<Void> joined = Sinks.empty();
		// Guarded by the session: whether this stripe's connection closed.
		boolean ended;

		Lane(Session session, int index) {
			this.session = session;
			this.index = index;
		}

		@Override
		public void onMessage(KVConnection c, KVMessage message) {
			if (message instanceof KVMessage.Fence fence) {
				session.onFence(this, fence);
			}
			else if (message instanceof KVMessage.AbortAck ack) {
				acknowledgeAbort(ack.room(), this);
			}
			else if (index == 0 || message instanceof KVMessage.Draining) {
				// A draining rank tells every stripe, so that whichever closes first was told why.
				session.onMessage(c, message);
			}
			else if (message instanceof KVMessage.Joined j && j.stripe() == index) {
				joined.tryEmitEmpty();
			}
			else if (message instanceof KVMessage.Reject reject) {
				joined.tryEmitError(new ProtocolException(reject.reason()));
			}
			else {
				c.close("unexpected " + message + " from prefill on stripe " + index);
			}
		}

		@Override
		public PayloadSink onData(KVConnection c, DataHeader h) {
			return session.onData(this, h);
		}

		@Override
		public void onClose(KVConnection c, CloseReason reason) {
			session.laneClosed(this, c, reason);
		}

		@Override
		public String toString() {
			return "stripe " + index + " of prefill rank " + session.endpoint;
		}
	}

	/** One prefill rank: its handshake, its rooms, and the stripes its bytes come over. */
	private final class Session {

		final SessionKey key;
		final HostPort endpoint;
		final PrefillParallelInfo info;
		final Mono<Session> entry;
		final Set<DecodeRoom> rooms = ConcurrentHashMap.newKeySet();
		final Sinks.Empty<Void> handshake = Sinks.empty();
		final Lane[] lanes;
		// Stripe 0's connection.
		volatile KVConnection conn;
		// The rank's layout from its handshake: which layers and heads it sends, whether decode pulls from all its
		// CP ranks.
		volatile PeerLayout prefill;
		// Why the rank admits no new rooms, once it said it drains; it keeps serving the rooms it holds.
		volatile String draining;
		// Names the session in each further stripe's join.
		volatile long token;
		// Once every stripe closed: nothing more lands from this rank.
		private volatile boolean closed;
		// Guarded by this.
		private final KVConnection[] connections;
		private int unclosed;
		private String closing;
		private CloseReason closedBy;
		// A stripe's heartbeat loss, if any: the rank counts as lost to silence once, however many stripes saw it.
		private CloseReason silentBy;

		Session(SessionKey key, HostPort endpoint, PrefillParallelInfo info, Mono<Session> entry, int stripes) {
			this.key = key;
			this.endpoint = endpoint;
			this.info = info;
			this.entry = entry;
			this.lanes = new Lane[stripes];
			for (int i = 0; i < stripes; i++) {
				lanes[i] = new Lane(this, i);
			}
			this.connections = new KVConnection[stripes];
		}

		/** @return false when the session is closing: {@code c} is then closed too */
		boolean attach(Lane lane, KVConnection c) {
			String reason;
			synchronized (this) {
				connections[lane.index] = c;
				if (!lane.ended) {
					// Else it closed before its connect returned, and was counted then.
					unclosed++;
				}
				reason = closing;
			}
			if (reason != null) {
				c.close(reason);
				return false;
			}
			return true;
		}

		synchronized List<KVConnection> attached() {
			return Stripes.attached(connections);
		}

		/** Closes every stripe: one stripe alone cannot serve the session. */
		void close(String reason) {
			synchronized (this) {
				if (closing == null) {
					closing = reason;
				}
			}
			for (KVConnection c : attached()) {
				c.close(reason);
			}
		}

		/** @return the step of the session's setup that has not finished, for the reason of its timeout */
		String stalledAt() {
			if (conn == null) {
				return "could not be connected to";
			}
			if (prefill == null) {
				return "did not answer the handshake";
			}
			return "did not let all " + lanes.length + " stripes join";
		}

		/** @return whether rooms may still be asked over this session */
		boolean isUsable() {
			KVConnection c = conn;
			synchronized (this) {
				return closing == null && closedBy == null && c != null && c.isActive();
			}
		}

		/**
		 * Fails a room whose connection went. A rank that said it drains closes once it served what it held: a room
		 * it had not taken yet fails because the rank drained, and says so.
		 */
		void lost(DecodeRoom r, String what, FailureCause cause) {
			String reason = draining;
			if (reason == null) {
				table.fail(r, cause, what, false);
			}
			else {
				table.fail(r, FailureCause.DRAINING, what + " (" + reason + ")", true);
			}
		}

		/**
		 * @return whether an abort went out (false once every stripe closed: then nothing more can come); while the
		 *         stripes are closing, their closing answers the abort
		 */
		boolean sendAbort(long room, String reason) {
			if (closed) {
				return false;
			}
			KVConnection c = conn;
			if (c == null) {
				return false;
			}
			// Not sent: the connection is going, and the session's close answers the abort once all stripes closed.
			c.send(new KVMessage.Abort(room, reason), SendGate.OPEN,
					Sends.ifFailed(e -> close("could not send the abort of room " + room + ": " + describe(e))));
			return true;
		}

		void onMessage(KVConnection c, KVMessage message) {
			if (message instanceof KVMessage.HelloAck ack) {
				token = ack.token();
				onHelloAck(ack.layout());
			}
			else if (message instanceof KVMessage.Reject reject) {
				// A rejected handshake names the incompatible values: the two layouts cannot work together.
				handshake.tryEmitError(new TopologyException(reject.reason()));
			}
			else if (message instanceof KVMessage.Status status) {
				onStatus(status);
			}
			else if (message instanceof KVMessage.Draining d) {
				String before;
				// Every stripe carries the notice: log it once.
				synchronized (this) {
					before = draining;
					draining = d.reason();
				}
				drained.put(endpoint, d.reason());
				if (before == null) {
					log.info("[{}] prefill rank {} drains: {}", name, endpoint, d.reason());
				}
			}
			else {
				c.close("unexpected " + message.getClass().getSimpleName() + " from prefill");
			}
		}

		/**
		 * The rank must be the one the bootstrap server named, in the instance it described: a prefill instance
		 * relaunched with other sizes behind a bootstrap server that kept the old ones would otherwise be planned with
		 * the wrong rank mapping (pages missing heads, too few responses counted).
		 */
		private void onHelloAck(PeerLayout prefill) {
			ParallelLayout p = prefill.parallel();
			String mismatch = null;
			if (p.attnTpSize() != info.attnTpSize() || p.ppSize() != info.ppSize() || p.dpSize() != info.dpSize()
					|| prefill.pageSize() != info.pageSize()) {
				mismatch = "prefill rank " + endpoint + " runs attn_tp_size=" + p.attnTpSize() + " dp_size="
						+ p.dpSize() + " pp_size=" + p.ppSize() + " page_size=" + prefill.pageSize()
						+ ", but bootstrap server " + key.bootstrap + " described the instance as attn_tp_size="
						+ info.attnTpSize() + " dp_size=" + info.dpSize() + " pp_size=" + info.ppSize()
						+ " page_size=" + info.pageSize() + " (it keeps the sizes of the first registration: "
						+ "restart it after relaunching prefill with other sizes)";
			}
			else if (p.attnTpRank() != key.tp || p.ppRank() != key.pp || p.dpGroup() != key.dp
					|| p.attnCpRank() != key.cp) {
				mismatch = "prefill rank " + endpoint + " is dp " + p.dpGroup() + " cp " + p.attnCpRank() + " tp "
						+ p.attnTpRank() + " pp " + p.ppRank() + ", but bootstrap server " + key.bootstrap
						+ " named it for dp " + key.dp + " cp " + key.cp + " tp " + key.tp + " pp " + key.pp;
			}
			if (mismatch != null) {
				forgetInstance(key.bootstrap);
				handshake.tryEmitError(new TopologyException(mismatch));
				return;
			}
			this.prefill = prefill;
			handshake.tryEmitEmpty();
		}

		private void onStatus(KVMessage.Status status) {
			DecodeRoom r = table.get(status.room());
			if (r == null) {
				// An ended room: whatever this rank says, it will send nothing more for it on stripe 0.
				acknowledgeAbort(status.room(), lanes[0]);
				return;
			}
			synchronized (r) {
				if (r.sessions == null || !r.sessions.contains(this)) {
					log.warn("[{}] prefill {} reported room {} it does not serve; ignored", name, endpoint, r.id);
					return;
				}
				if (status.status() != KVPoll.SUCCESS) {
					if (lanes.length == 1) {
						// On one connection the report follows everything the rank sent for the room.
						r.finished.add(this);
					}
					if (status.status() == KVPoll.FAILED) {
						// A draining rank fails rooms only because it drains: it refused them, or its deadline passed.
						table.fail(r, draining != null ? FailureCause.DRAINING
								: status.reason().startsWith(KVMessage.OVERLOADED) ? FailureCause.OVERLOAD
										: FailureCause.PEER_FAILED,
								"Prefill rank " + endpoint + " failed room " + r.id + ": " + status.reason(), true);
					}
					return;
				}
				if (r.successes.putIfAbsent(this, status) != null) {
					table.fail(r, FailureCause.PROTOCOL, "prefill rank " + endpoint + " reported Success for room "
							+ r.id + " twice", false);
					return;
				}
				judgeWhenFenced(r);
			}
		}

		/** A stripe's bytes for a room are over: they must be what landed on it. */
		void onFence(Lane lane, KVMessage.Fence fence) {
			DecodeRoom r = table.get(fence.room());
			if (r == null) {
				acknowledgeAbort(fence.room(), lane);
				return;
			}
			synchronized (r) {
				if (lane.index == 0 || r.sessions == null || !r.writers.contains(this)) {
					table.fail(r, FailureCause.PROTOCOL, "prefill rank " + endpoint + " sent a fence for room " + r.id
							+ " on stripe " + lane.index + " (expected: only on stripes 1.." + (lanes.length - 1)
							+ " of a rank asked to write the room)", false);
					return;
				}
				if (r.fences.putIfAbsent(lane, fence) != null) {
					table.fail(r, FailureCause.PROTOCOL, "prefill rank " + endpoint + " fenced room " + r.id
							+ " twice on stripe " + lane.index, false);
					return;
				}
				String short_ = mismatch(r, lane, fence.bytes(), fence.checksum(), "a fence");
				if (short_ != null) {
					table.fail(r, FailureCause.INCOMPLETE, short_, false);
					return;
				}
				judgeWhenFenced(r);
			}
		}

		/** Judges the rank's Success once it and every other stripe's fence arrived; under the room's monitor. */
		private void judgeWhenFenced(DecodeRoom r) {
			KVMessage.Status status = r.successes.get(this);
			if (status == null || r.isTerminal()) {
				return;
			}
			long fencedBytes = 0;
			for (int i = 1; i < lanes.length; i++) {
				KVMessage.Fence f = r.fences.get(lanes[i]);
				if (f == null) {
					return;
				}
				fencedBytes += f.bytes();
			}
			// Every stripe's bytes landed: the rank sends nothing more for the room.
			r.finished.add(this);
			String short_ = mismatch(r, lanes[0], status.bytes() - fencedBytes, status.checksum(), "Success");
			if (short_ != null) {
				table.fail(r, FailureCause.INCOMPLETE, short_, false);
				return;
			}
			r.trace.event(RoomTrace.Event.RANK_DONE, status.bytes());
			r.responders.add(status.prefillRank());
			if (r.responders.size() >= r.mapping.requiredPrefillResponseNum()) {
				// Every rank says it is done; decode's own ledger decides whether the room is.
				String missing = r.ledger.incomplete();
				if (missing != null) {
					table.fail(r, FailureCause.INCOMPLETE, "room " + r.id + " is incomplete although its prefill "
							+ "ranks reported Success: " + missing, false);
					return;
				}
				table.advance(r, KVPoll.SUCCESS);
			}
		}

		/** @return why a stripe's report does not match what landed on it, or null when every byte is in place */
		private String mismatch(DecodeRoom r, Lane lane, long bytes, long checksum, String report) {
			Tally landed = r.tallies.get(lane);
			long got = landed == null ? 0 : landed.bytes();
			String where = lanes.length == 1 ? "" : " on stripe " + lane.index;
			if (bytes != got) {
				return "prefill rank " + endpoint + " reported " + report + " for room " + r.id + " with " + bytes
						+ " bytes sent" + where + ", but " + got + " landed";
			}
			if (config.checksums()) {
				long crc = landed == null ? new Tally(true).checksum() : landed.checksum();
				if (checksum != crc) {
					return "prefill rank " + endpoint + " reported " + report + " for room " + r.id + " with CRC32C "
							+ hex(checksum) + where + ", but the bytes that landed have " + hex(crc);
				}
			}
			return null;
		}

		PayloadSink onData(Lane lane, DataHeader h) {
			DecodeRoom r = table.get(h.room());
			if (r == null || !r.acceptsBytes()) {
				return null;
			}
			long destination;
			Tally tally;
			synchronized (r) {
				try {
					if (r.ledger == null || !r.writers.contains(this)) {
						throw new GrantLedger.Refused("the room asked this prefill rank for nothing");
					}
					destination = r.ledger.destination(h);
				}
				catch (GrantLedger.Refused refused) {
					table.fail(r, FailureCause.PROTOCOL, "prefill rank " + endpoint + " wrote outside room " + r.id
							+ ": " + refused.getMessage(), false);
					return null;
				}
				// Stripe 0's Success fences it as a Fence does the others: nothing more may come on it.
				if (r.fences.containsKey(lane) || lane.index == 0 && r.successes.containsKey(this)) {
					table.fail(r, FailureCause.PROTOCOL, "prefill rank " + endpoint + " sent bytes of room " + r.id
							+ " on stripe " + lane.index + " after " + (lane.index == 0 ? "its Success" : "fencing it"),
							false);
					return null;
				}
				try {
					r.ledger.reserve(h);
				}
				catch (GrantLedger.Refused refused) {
					table.fail(r, FailureCause.PROTOCOL, "prefill rank " + endpoint + " wrote room " + r.id
							+ " more than its ledger allows: " + refused.getMessage(), false);
					return null;
				}
				// Fed only on this stripe's thread, in its order.
				tally = r.tallies.computeIfAbsent(lane, l -> new Tally(config.checksums()));
				if (!r.transferring) {
					r.transferring = true;
					r.trace.event(RoomTrace.Event.FIRST_BYTE, 0);
					table.advance(r, KVPoll.TRANSFERRING);
				}
			}
			GrantLedger ledger = r.ledger;
			return new PayloadWriter(destination, h, r::acceptsBytes, tally, n -> {
				bytesReceived.add(n);
				if (ledger.landed(h.kind(), h.region(), n) && h.kind() == RegionKind.KV) {
					r.layers.landed(h.region());
				}
			});
		}

		/**
		 * One stripe closed: the others are closed with it, and once the last one closed (nothing of this rank lands
		 * any more) the session's rooms fail and the aborts waiting for it are answered.
		 */
		void laneClosed(Lane lane, KVConnection c, CloseReason reason) {
			boolean first;
			boolean last;
			CloseReason cause;
			// What the session is counted lost to once the last stripe closed: silence if any stripe saw it.
			CloseReason counted = null;
			synchronized (this) {
				first = closedBy == null;
				if (first) {
					closedBy = reason;
					if (closing == null) {
						closing = "stripe " + lane.index + " to prefill rank " + endpoint + " closed: " + reason;
					}
				}
				if (reason.kind() == CloseReason.Kind.SILENT_PEER) {
					silentBy = reason;
				}
				cause = closedBy;
				lane.ended = true;
				if (connections[lane.index] != null) {
					unclosed--;
				}
				last = unclosed == 0 && !closed;
				if (last) {
					closed = true;
					counted = silentBy != null ? silentBy : closedBy;
				}
			}
			if (first) {
				sessions.remove(key, entry);
				ProtocolException lost = new ProtocolException("connection to prefill rank " + endpoint + " closed: "
						+ reason);
				handshake.tryEmitError(lost);
				for (Lane l : lanes) {
					l.joined.tryEmitError(lost);
				}
				for (KVConnection other : attached()) {
					if (other != c) {
						other.close("stripe " + lane.index + " to prefill rank " + endpoint + " closed: " + reason);
					}
				}
			}
			if (!last) {
				return;
			}
			connectionClosed(counted);
			open.remove(this);
			for (DecodeRoom r : rooms) {
				lost(r, "Lost connection with prefill rank " + endpoint + ": " + cause, lostWith(cause));
			}
			rooms.clear();
			// Nothing more can land from this rank: every abort waiting for it is answered.
			for (AbortWait w : aborts.values()) {
				w.acknowledged(lanes);
			}
		}
	}

	private static String hex(long crc) {
		return crc < 0 ? "none" : String.format("0x%08x", crc);
	}

	/** A room could not reach a prefill rank that announced a drain before it went away. */
	private static final class DrainedRankException extends KVFerryException {

		private static final long serialVersionUID = 1L;

		DrainedRankException(String message, Throwable cause) {
			super(message, cause);
		}
	}
}
