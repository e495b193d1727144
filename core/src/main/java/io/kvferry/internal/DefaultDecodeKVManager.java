package io.kvferry.internal;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;

import io.kvferry.DecodeConfig;
import io.kvferry.DecodeKVManager;
import io.kvferry.DisaggregationMode;
import io.kvferry.FailureCause;
import io.kvferry.HostPort;
import io.kvferry.KVArgs;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.RoomTrace;
import io.kvferry.TopologyException;
import io.kvferry.bootstrap.BootstrapException;
import io.kvferry.bootstrap.PrefillParallelInfo;
import io.kvferry.bootstrap.RegistryChange;
import io.kvferry.internal.DecodeRoutes.Resolved;
import io.kvferry.internal.topology.RankMapping;
import io.kvferry.spi.CloseReason;
import io.kvferry.spi.PeerLayout;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.util.retry.Retry;

/**
 * The decode side's manager: resolves prefill instances through their bootstrap server (once per instance, reused by
 * later rooms while it holds), keeps one {@link DecodeSession} per prefill rank (its handshake checked against the
 * layout the bootstrap server described), and admits rooms. Each room is its own {@link DecodeRoom}, which is also the
 * room's receiver: it asks its prefill ranks, checks and counts every write in its ledger, and judges itself. The
 * manager sees a room again only when it ended.
 */
final class DefaultDecodeKVManager extends BaseKVManager<DecodeRoom, DecodeConfig>
		implements DecodeKVManager, DecodeSession.Owner {

	private static final Logger log = LoggerFactory.getLogger(DefaultDecodeKVManager.class);
	// SGLang retries the parallel-info fetch at least 1 s apart, 15 times.
	private static final int PARALLEL_INFO_ATTEMPTS = 15;
	private static final Duration PARALLEL_INFO_DELAY = Duration.ofSeconds(1);

	// What the sessions and rooms need of this manager, handed to each once.
	private final DecodeSupport support;
	private final ConcurrentHashMap<HostPort, Mono<PrefillParallelInfo>> instances = new ConcurrentHashMap<>();
	private final ConcurrentHashMap<SessionKey, Mono<DecodeSession>> sessions = new ConcurrentHashMap<>();
	// Sessions whose connection has not closed yet.
	private final Set<DecodeSession> open = ConcurrentHashMap.newKeySet();
	// The last resolution of each prefill instance, per DP group.
	private final DecodeRoutes routes = new DecodeRoutes(instances, sessions, open);
	// The incarnation each prefill rank was last seen with: a rank seen with another one restarted.
	private final PeerIncarnations<SessionKey> incarnations = new PeerIncarnations<>();
	// Prefill ranks that failed again and again: their new rooms fail at once until a probe reaches them.
	private final PeerBreakers breakers;

	private final Disposable registryWatch;
	// The hint this rank's overload refusals carry.
	private final RetryAfter retryAfter;
	// Swaps this rank's regions at run time.
	private final Reregistration reregistration;

	/** @param registration the transport's registration of the regions, which a re-registration replaces */
	DefaultDecodeKVManager(DecodeConfig config, Disposable.Swap registration) {
		super(config, PeerLayout.of(config.kvArgs(), config.layout(), false, false));
		this.retryAfter = new RetryAfter(config.overloadRetryAfter());
		this.breakers = new PeerBreakers(name, config.breakerFailures(), config.breakerProbeInterval(), config.timer());
		this.support = new DecodeSupport(config, name, ownLayout, incarnation, bytesReceived);
		this.reregistration = new Reregistration(support, table, registration, open);
		this.registryWatch = config.bootstrapClient().changes().subscribe(this::onRegistryChange,
				e -> log.warn("[{}] the registry stopped reporting changes ({}); cached prefill instances are kept "
						+ "until a handshake shows them stale", name, Failures.describe(e)));
	}

	/** What a registry reports stale is forgotten at once; connections to a rank that left or moved are closed. */
	private void onRegistryChange(RegistryChange change) {
		SessionKey key = new SessionKey(change.bootstrap(), change.dpGroup(), 0, change.tpRank(), change.ppRank());
		if (change.kind() == RegistryChange.Kind.RANK_REMOVED
				&& open.stream().anyMatch(s -> s.key.sameRankAs(key) && s.draining != null)) {
			// A draining rank left on purpose: it finishes the rooms it holds, and its connection keeps refusing new
			// ones with its reason (rather than decode retrying an instance that is going away) until it closes.
			log.debug("[{}] draining prefill rank dp {} tp {} pp {} of {} left the registry", name, key.dp(), key.tp(),
					key.pp(), key.bootstrap());
			return;
		}
		if (change.kind() != RegistryChange.Kind.INSTANCE_CHANGED && change.kind() != RegistryChange.Kind.RANK_REMOVED
				&& incarnations.isRetired(key, change.incarnation())) {
			// A replaced process registered again (back from a pause, or a registry replaying an old registration):
			// the rank's current process keeps its connections and routes, and a look-up that answers the old one
			// is refused.
			log.warn("[{}] {}; its sessions with incarnation {} are kept", name, retiredReason(key,
					change.incarnation(), "its registration"), Incarnation.text(incarnations.current(key)));
			return;
		}
		forgetInstance(change.bootstrap());
		if (change.kind() == RegistryChange.Kind.INSTANCE_CHANGED) {
			return;
		}
		// Moved or restarted, it is another peer; removed, there is nothing to probe.
		breakers.forget(key::sameRankAs);
		if (change.kind() != RegistryChange.Kind.RANK_REMOVED) {
			// A rank that came back as another process fails the old one's rooms as restarted.
			for (DecodeSession s : open) {
				if (s.key.sameRankAs(key)) {
					observeIncarnation(s.key, change.incarnation(), "its registration");
				}
			}
			if (change.kind() == RegistryChange.Kind.RANK_RESTARTED) {
				return;
			}
		}
		for (DecodeSession s : open) {
			if (s.key.sameRankAs(key)) {
				s.close("prefill rank dp " + key.dp() + " tp " + key.tp() + " pp " + key.pp() + " of " + key.bootstrap()
						+ (change.kind() == RegistryChange.Kind.RANK_REMOVED ? " left the registry"
								: " registered another endpoint"));
			}
		}
	}

	@Override
	public KVArgs kvArgs() {
		return support.registered.args();
	}

	@Override
	public Mono<Integer> reregister(KVArgs args, Duration deadline) {
		Objects.requireNonNull(deadline, "deadline");
		if (deadline.isNegative()) {
			throw new IllegalArgumentException("deadline : " + deadline + " (expected: >= 0)");
		}
		PeerLayout layout = reregistration.check(args);
		return Mono.defer(() -> {
			checkOpen();
			return reregistration.run(args, layout, deadline);
		}).publishOn(config.callbackScheduler());
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
		// Made under the table's monitor, as a re-registration pauses and resumes it: a room admitted before the pause
		// is one the re-registration waits for, and one admitted after it lands in the new regions.
		DecodeRoom[] made = new DecodeRoom[1];
		DecodeRoom r = table.getOrCreate(room, id -> made[0] = new DecodeRoom(support, table, id, bootstrapAddr));
		String draining = table.refusalReason();
		if (r == null && draining != null && !table.isTombstoned(room)) {
			// Born failed, so that the engine frees the room's pages (and may route it elsewhere) at once.
			DecodeRoom fresh = new DecodeRoom(support, table, room, bootstrapAddr);
			fresh.trace = traceNow(DisaggregationMode.DECODE, room, "", DeferredRoomTracer.epochNanos());
			table.advance(fresh, KVPoll.BOOTSTRAPPING);
			table.fail(fresh, FailureCause.DRAINING, draining, false);
			return fresh;
		}
		if (r == null || r != made[0]) {
			throw new IllegalStateException("room " + room + (r == null ? " already ended on " : " already has a live receiver on ")
					+ name + "; rooms are not reused");
		}
		reregistration.admitted(r);
		r.trace = traceNow(DisaggregationMode.DECODE, room, "", DeferredRoomTracer.epochNanos());
		table.advance(r, KVPoll.BOOTSTRAPPING);
		Resolved known = routes.current(r.bootstrap, room, prefillDpRank);
		// Counted in the table before the check: rooms opened at the same time may all be refused at the bound, but
		// never all admitted past it.
		if (table.live() > config.maxRooms()) {
			refuse(r, prefillDpRank, known, "decode rank " + name + " already has " + config.maxRooms()
					+ " rooms in flight");
			return r;
		}
		if (known != null) {
			// The common case: straight to the request on this thread, without assembling and subscribing a chain.
			r.trace.event(RoomTrace.Event.BOOTSTRAP_RESOLVED, 0);
			r.trace.event(RoomTrace.Event.HANDSHAKE_DONE, known.sessions().size());
			admit(r, prefillDpRank, known);
			return r;
		}
		resolve(r, prefillDpRank).subscribe(resolved -> admit(r, prefillDpRank, resolved),
				e -> table.fail(r, e instanceof TopologyException ? FailureCause.INCOMPATIBLE
						: e instanceof DrainedRankException ? FailureCause.DRAINING
						: e instanceof PeerRefusedException p ? p.cause : FailureCause.BOOTSTRAP,
						"Could not bootstrap room " + room + " from " + bootstrapAddr + ": " + Failures.describe(e),
						e instanceof BootstrapException || e instanceof DrainedRankException
								|| e instanceof PeerRefusedException q && q.cause == FailureCause.PEER_RESTARTED));
		return r;
	}

	/** Counts the room on each of its prefill ranks, then asks them; refuses it when one has its bound in flight. */
	private void admit(DecodeRoom r, Integer dpHint, Resolved resolved) {
		for (DecodeSession s : resolved.sessions()) {
			String refused = breakers.refusal(s.key);
			if (refused != null) {
				// The rank's sender, if its engine made one, fails at once instead of waiting for decode's request.
				String reason = "Could not ask for room " + r.id + ": " + refused;
				tell(resolved, r.id, new RoomTable.Ended(FailureCause.PEER_UNAVAILABLE, reason, false));
				table.fail(r, FailureCause.PEER_UNAVAILABLE, reason, false);
				return;
			}
		}
		String over = null;
		synchronized (r) {
			// A room that ended meanwhile is not counted: its end (which released the counts) has passed.
			if (!r.isTerminal()) {
				List<DecodeSession> counted = new ArrayList<>();
				for (DecodeSession s : new LinkedHashSet<>(resolved.sessions())) {
					if (s.admitted.incrementAndGet() > config.maxRoomsPerPeer()) {
						s.admitted.decrementAndGet();
						over = "prefill rank " + s.endpoint + " already has " + config.maxRoomsPerPeer()
								+ " rooms in flight with decode rank " + name;
						break;
					}
					counted.add(s);
				}
				if (over == null) {
					r.countedOn = counted;
				}
				else {
					counted.forEach(s -> s.admitted.decrementAndGet());
				}
			}
		}
		if (over != null) {
			refuse(r, dpHint, resolved, over);
			return;
		}
		r.resolved(resolved);
	}

	/**
	 * Fails a room over a bound at once, with a retry hint, and tells its prefill ranks (resolving them first when
	 * needed) so that their senders fail the same way instead of waiting for the room's bootstrap timeout.
	 */
	private void refuse(DecodeRoom r, Integer dpHint, Resolved known, String over) {
		Duration hint = retryAfter.hint();
		String why = Overload.reason(hint, "decode rank " + name + " refused room " + r.id + ": " + over);
		r.retryAfter(hint);
		table.fail(r, FailureCause.OVERLOAD, why, false);
		RoomTable.Ended refused = new RoomTable.Ended(FailureCause.OVERLOAD, why, false, hint);
		if (known != null) {
			tell(known, r.id, refused);
			return;
		}
		resolve(r, dpHint).subscribe(resolved -> tell(resolved, r.id, refused), e -> log.debug("[{}] could not tell "
				+ "the prefill ranks of {} that room {} was refused: {}", name, r.bootstrap, r.id, Failures.describe(e)));
	}

	private static void tell(Resolved resolved, long room, RoomTable.Ended refused) {
		for (DecodeSession s : new LinkedHashSet<>(resolved.sessions())) {
			s.abort(room, refused);
		}
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
					for (DecodeSession s : l) {
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
				r.trace.event(RoomTrace.Event.HANDSHAKE_DONE, resolved.sessions().size());
			});
		});
	}

	private Mono<List<DecodeSession>> sessions(DecodeRoom r, RankMapping mapping, int dp, PrefillParallelInfo info) {
		return Flux.fromIterable(mapping.targets())
				.concatMap(t -> {
					SessionKey key = new SessionKey(r.bootstrap, dp, t.cpRank(), t.tpRank(), t.ppRank());
					String refused = breakers.refusal(key);
					return refused == null ? session(key, info)
							: Mono.error(new PeerRefusedException(FailureCause.PEER_UNAVAILABLE, refused));
				})
				.collectList();
	}

	private Mono<PrefillParallelInfo> parallelInfo(HostPort bootstrap) {
		return instances.computeIfAbsent(bootstrap, b -> config.bootstrapClient().parallelInfo(b)
				.switchIfEmpty(Mono.error(() -> new BootstrapException(BootstrapException.Kind.OTHER, 0,
						"the bootstrap client answered nothing for the parallel info of " + b)))
				.retryWhen(Retry.fixedDelay(PARALLEL_INFO_ATTEMPTS - 1, PARALLEL_INFO_DELAY)
						.filter(e -> e instanceof BootstrapException be && be.isRetryable())
						.scheduler(config.timer())
						// Rooms wait meanwhile: say why, and keep it for the reason of a room that times out waiting.
						.doBeforeRetry(signal -> {
							String failure = "attempt " + (signal.totalRetries() + 1) + "/" + PARALLEL_INFO_ATTEMPTS
									+ " failed: " + Failures.describe(signal.failure());
							support.lookUpFailures.put(b, failure);
							log.warn("[{}] parallel info of {}: {}, retrying in {} ms", name, b, failure,
									PARALLEL_INFO_DELAY.toMillis());
						})
						.onRetryExhaustedThrow((spec, signal) -> signal.failure()))
				// Its rooms have their answer, or fail with its error: the failure of the retries is no longer news.
				.doFinally(signal -> support.lookUpFailures.remove(b))
				.doOnError(e -> instances.remove(b))
				.cache(v -> Duration.ofMillis(Long.MAX_VALUE), e -> Duration.ZERO, () -> Duration.ZERO));
	}

	/**
	 * Records the incarnation a prefill rank showed. When it is another than the one cached, the rank restarted: the
	 * instance's cached sizes and routes are forgotten, and every session with the old process is closed at once,
	 * failing its rooms with {@link FailureCause#PEER_RESTARTED}.
	 *
	 * @param how where the incarnation came from, for the reason
	 */
	@Override
	public void observeIncarnation(SessionKey key, long incarnation, String how) {
		long old = incarnations.observe(key, incarnation);
		if (old == Incarnation.UNKNOWN) {
			return;
		}
		String reason = "prefill rank dp " + key.dp() + " cp " + key.cp() + " tp " + key.tp() + " pp " + key.pp()
				+ " of " + key.bootstrap() + " restarted: incarnation " + Incarnation.text(old) + " was replaced by "
				+ Incarnation.text(incarnation) + " (" + how + ")";
		log.warn("[{}] {}", name, reason);
		forgetInstance(key.bootstrap());
		breakers.forget(key::equals);
		for (DecodeSession s : open) {
			if (s.key.equals(key) && s.incarnation != incarnation) {
				s.replaced(reason);
			}
		}
	}

	/**
	 * A prefill rank that shows an incarnation it left behind is refused: the registry answered an old registration, or
	 * the old process came back (resumed from a pause) and answered the handshake. The session is not made (or is
	 * closed), its rooms fail {@link FailureCause#PEER_RESTARTED}, and the next room looks the rank up again.
	 *
	 * @param how where the incarnation came from, for the reason
	 * @return the refusal, naming both incarnations; null when {@code incarnation} is not retired
	 */
	@Override
	public PeerRefusedException refuseRetired(SessionKey key, long incarnation, String how) {
		if (!incarnations.isRetired(key, incarnation)) {
			return null;
		}
		String reason = retiredReason(key, incarnation, how);
		log.warn("[{}] {}", name, reason);
		return new PeerRefusedException(FailureCause.PEER_RESTARTED, reason);
	}

	private String retiredReason(SessionKey key, long incarnation, String how) {
		return "prefill rank dp " + key.dp() + " cp " + key.cp() + " tp " + key.tp() + " pp " + key.pp() + " of "
				+ key.bootstrap() + " showed incarnation " + Incarnation.text(incarnation) + " (" + how + "), which "
				+ "was replaced by " + Incarnation.text(incarnations.current(key)) + ": a replaced process is never "
				+ "taken back";
	}

	/** Counts a failure with a prefill rank against its circuit breaker; a probe opens (or finds) its session. */
	void peerFailed(SessionKey key, PrefillParallelInfo info, String what) {
		breakers.failed(key, what, () -> session(key, info));
	}

	/** Forgets an instance's sizes (they no longer match its ranks), so that the next room fetches them again. */
	@Override
	public void forgetInstance(HostPort bootstrap) {
		instances.remove(bootstrap);
		routes.forget(bootstrap);
	}

	private Mono<DecodeSession> session(SessionKey key, PrefillParallelInfo info) {
		return sessions.computeIfAbsent(key, k -> {
			// The entry this call creates: only it may be removed by its own session's end, never a newer one.
			AtomicReference<Mono<DecodeSession>> entry = new AtomicReference<>();
			Mono<DecodeSession> mono = config.bootstrapClient()
					.rankRoute(k.bootstrap(), k.dp(), k.cp(), k.tp(), k.pp())
					// An answer without an endpoint must fail the rooms, not leave them waiting for their timeout.
					.switchIfEmpty(Mono.error(() -> new BootstrapException(BootstrapException.Kind.OTHER, 0,
							"the bootstrap client answered nothing for prefill rank dp " + k.dp() + " cp " + k.cp() + " tp "
									+ k.tp() + " pp " + k.pp() + " of " + k.bootstrap())))
					.flatMap(route -> {
						PeerRefusedException retired = refuseRetired(k, route.incarnation(), "its registration");
						if (retired != null) {
							return Mono.error(retired);
						}
						observeIncarnation(k, route.incarnation(), "its registration");
						return new DecodeSession(support, this, table::get, k, route, info, entry.get())
								.open()
								.doOnNext(s -> breakers.succeeded(k))
								.doOnError(e -> {
									// A refused or drained rank is not failing: only connections and handshakes count.
									if (!(e instanceof PeerRefusedException) && !(e instanceof DrainedRankException)) {
										peerFailed(k, info, "could not connect or shake hands with " + route.endpoint()
												+ ": " + Failures.describe(e));
									}
								});
					})
					.doOnError(e -> sessions.remove(k, entry.get()))
					.cache(v -> Duration.ofMillis(Long.MAX_VALUE), e -> Duration.ZERO, () -> Duration.ZERO);
			entry.set(mono);
			return mono;
		});
	}

	@Override
	public void connected(DecodeSession s) {
		open.add(s);
	}

	@Override
	public void gone(DecodeSession s) {
		open.remove(s);
	}

	@Override
	public void closing(DecodeSession s) {
		sessions.remove(s.key, s.entry);
	}

	@Override
	public void closed(DecodeSession s, CloseReason counted) {
		connectionClosed(counted);
		open.remove(s);
	}

	@Override
	protected int connectionCount() {
		return open.size();
	}

	@Override
	PeerBreakers peerBreakers() {
		return breakers;
	}

	@Override
	protected Mono<Void> closeResources() {
		registryWatch.dispose();
		breakers.dispose();
		List<Mono<Void>> closed = new ArrayList<>();
		for (DecodeSession s : open) {
			closed.add(s.connection.closeAll("KV manager " + name + " closed"));
		}
		return Mono.when(closed);
	}

	@Override
	protected void onTerminal(DecodeRoom r) {
		List<DecodeSession> counted;
		synchronized (r) {
			counted = r.countedOn;
			r.countedOn = null;
		}
		if (counted != null) {
			counted.forEach(s -> s.admitted.decrementAndGet());
			if (r.state() == KVPoll.SUCCESS) {
				counted.forEach(s -> breakers.succeeded(s.key));
			}
		}
		if (r.state() == KVPoll.SUCCESS) {
			retryAfter.succeeded(System.nanoTime() - r.firstStateNanos());
		}
		r.ended();
	}
}
