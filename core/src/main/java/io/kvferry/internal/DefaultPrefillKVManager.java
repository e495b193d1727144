package io.kvferry.internal;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import io.kvferry.FailureCause;
import io.kvferry.HostPort;
import io.kvferry.PrefillConfig;
import io.kvferry.KVPoll;
import io.kvferry.KVSender;
import io.kvferry.ParallelLayout;
import io.kvferry.PrefillKVManager;
import io.kvferry.RoomRequest;
import io.kvferry.RoomTrace;
import io.kvferry.bootstrap.BootstrapFields;
import io.kvferry.bootstrap.PrefillRegistration;
import io.kvferry.internal.stripe.AcceptedStripes;
import io.kvferry.internal.topology.LocalAddress;
import io.kvferry.internal.topology.RankMapping;
import io.kvferry.spi.CloseReason;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.KVTransport;
import io.kvferry.spi.PeerLayout;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.Disposable;
import reactor.core.Disposables;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * The prefill side's manager: listens for decode ranks and keeps this rank registered, admits rooms and hands the
 * engine their senders, drains and closes. Each decode rank is a {@link PrefillSession} (its handshake, requests and
 * aborts) and each room a {@link PrefillTransfer}, which is also the room's sender and moves its pages chunk by chunk,
 * then state, aux and Success. How a decode rank's connections are accepted and joined is {@link AcceptedStripes}'s
 * business.
 */
final class DefaultPrefillKVManager extends BaseKVManager<PrefillTransfer, PrefillConfig> implements PrefillKVManager {

	private static final Logger log = LoggerFactory.getLogger(DefaultPrefillKVManager.class);

	// What the sessions, rooms and destinations need of this manager, handed to each once.
	private final PrefillSupport support;
	private final HotStream<RoomRequest> requests;
	private final Set<PrefillSession> sessions = ConcurrentHashMap.newKeySet();
	private final AcceptedStripes accepted;
	// Counts the lease ticks and expires the leases decode ranks let run out; null without leases.
	private final RoomLeases.Sweeper leases;
	private volatile KVTransport.Listener listener;
	private volatile HostPort endpoint;
	private volatile Disposable reregistration = Disposables.disposed();
	private volatile PrefillRegistration registration;
	private volatile Mono<Void> withdrawn = Mono.empty();

	private DefaultPrefillKVManager(PrefillConfig config) {
		super(config, PeerLayout.of(config.kvArgs(), config.layout(), config.allCpRanksTransfer(),
				config.dsaCacheLayerSplit()));
		this.requests = new HotStream<>(config.callbackScheduler(), config.eventBufferSize(),
				// Later, on the timer: the emitter may hold another room's monitor.
				dropped -> config.timer().schedule(() -> requestDropped(dropped)), true);
		ParallelLayout l = config.layout();
		int uniqueRank = RankMapping.prefillUniqueRank(l.attnTpRank(), l.ppSize(), l.ppRank(), l.attnCpSize(),
				l.attnCpRank());
		boolean cpDummy = l.attnCpRank() != 0 && !config.allCpRanksTransfer() && !config.dsaCacheLayerSplit();
		Duration lease = config.leasePeriod();
		this.leases = lease.isZero() ? null : new RoomLeases.Sweeper(config.timer(), lease.toNanos(), this::expireLeases);
		this.support = new PrefillSupport(config, name, ownLayout, incarnation, uniqueRank, cpDummy, bytesSent,
				pagesSent, requests, leases, tracing);
		this.accepted = new AcceptedStripes(name, table::drainReason, c -> {
			PrefillSession s = new PrefillSession(support, table, c, this::sessionClosed);
			sessions.add(s);
			return s;
		}, this::connectionClosed);
	}

	static Mono<PrefillKVManager> start(PrefillConfig config) {
		DefaultPrefillKVManager m = new DefaultPrefillKVManager(config);
		return config.transport().listen(config.bindAddress(), m.accepted::accept).flatMap(l -> {
			m.listener = l;
			if (m.leases != null) {
				m.leases.start();
			}
			m.endpoint = new HostPort(m.advertiseHost(l.address()), l.address().port());
			PrefillRegistration registration = new PrefillRegistration(PrefillRegistration.PREFILL, config.layout(),
					m.endpoint.host(), m.endpoint.port(), config.kvArgs().pageSize(), config.dsaCacheLayerSplit(),
					config.allCpRanksTransfer(), m.incarnation, config.moreAdvertiseHosts().stream()
							.map(h -> new HostPort(h, m.endpoint.port())).toList());
			log.info("[{}] listening on {} (advertised {}{}) as incarnation {}, registering with {}", m.name,
					l.address(), m.endpoint, registration.moreEndpoints().isEmpty() ? ""
							: " and " + BootstrapFields.endpointsText(registration.moreEndpoints()),
					Incarnation.text(m.incarnation), config.bootstrapAddress());
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

	/** Fails the rooms whose leases ran out: those decode ranks stopped renewing, and those no replacement claimed. */
	private void expireLeases() {
		for (PrefillSession s : sessions) {
			s.expireLeases();
		}
		PrefillSession.expireOrphans(support);
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
									Failures.describe(e));
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

	/** A request no subscriber took in time: its room would wait for a sender nobody makes, so it fails now. */
	private void requestDropped(RoomRequest dropped) {
		PrefillTransfer r = table.get(dropped.room());
		if (r != null) {
			r.retryAfter(support.retryAfter.hint());
			r.failUnclaimed(FailureCause.OVERLOAD, "the request for room " + r.id + " was dropped: a roomRequests() "
					+ "subscriber fell more than " + config.eventBufferSize() + " requests behind");
		}
	}

	@Override
	public HostPort endpoint() {
		return endpoint;
	}

	@Override
	public KVSender sender(long room) {
		checkOpen();
		PrefillTransfer r = table.getOrCreate(room, id -> new PrefillTransfer(support, table, id));
		if (r == null) {
			RoomTable.Ended early = table.endedBeforeKnown(room);
			String draining = table.drainReason();
			if (early == null && (draining == null || table.isTombstoned(room))) {
				throw new IllegalStateException("room " + room + " already ended on " + name + "; rooms are not reused");
			}
			// The room ended before the engine got here (decode gave up, a refusal, an expired lease), or this rank
			// drains: the sender is born failed, so the engine frees its pages now rather than after a timeout.
			return PrefillTransfer.bornFailed(support, table, room, early != null ? early
					: new RoomTable.Ended(FailureCause.DRAINING, draining, false));
		}
		r.claim();
		return r;
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
		List<PrefillSession> handshaken = new ArrayList<>();
		for (PrefillSession s : sessions) {
			if (s.peer.isHandshaken()) {
				handshaken.add(s);
			}
		}
		AtomicInteger untold = new AtomicInteger(handshaken.size() + 1);
		Runnable told = () -> {
			if (untold.decrementAndGet() == 0) {
				withdrawRegistration().doFinally(signal -> done.tryEmitEmpty()).subscribe();
			}
		};
		// On every connection of each decode rank: whichever one decode sees close first, it read the notice before,
		// so the rooms it fails then fail because this rank drains.
		for (PrefillSession s : handshaken) {
			s.peer.connection.broadcast(new KVMessage.Draining(reason), told);
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
							Failures.describe(e));
					return Mono.empty();
				});
	}

	@Override
	Mono<Void> closeResources() {
		if (leases != null) {
			leases.dispose();
		}
		requests.complete();
		List<Mono<Void>> closed = new ArrayList<>();
		// First, so that no decode rank picks this rank while it closes.
		closed.add(withdrawRegistration());
		// Until every connection closed, queued blocks may still be read from the engine's memory.
		closed.add(accepted.close("KV manager " + name + " closed"));
		KVTransport.Listener l = listener;
		if (l != null) {
			l.dispose();
		}
		return Mono.when(closed);
	}

	@Override
	RoomTrace traceAtEnd(PrefillTransfer r) {
		return r.traceAtEnd();
	}

	@Override
	void onTerminal(PrefillTransfer r) {
		if (r.state() == KVPoll.SUCCESS) {
			support.retryAfter.succeeded(System.nanoTime() - r.firstStateNanos());
		}
		r.ended();
	}

	/** A decode rank's every connection closed: it is counted (a heartbeat loss, if any) and forgotten. */
	private void sessionClosed(PrefillSession s, CloseReason counted) {
		connectionClosed(counted);
		sessions.remove(s);
	}
}
