package io.kvferry.cli;

import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

import io.kvferry.HostPort;
import io.kvferry.bootstrap.BootstrapClient;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.kvferry.harness.KVFleet;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RoomResult;
import io.kvferry.registry.etcd.EtcdBootstrapClient;
import io.kvferry.transport.local.InMemoryKVTransport;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.netty.util.internal.PlatformDependent;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * A fleet of prefill and decode instances in this JVM, grown step by step: for each size, N prefill and N decode
 * instances of TP ranks on the in-memory transport, each prefill instance registered with a bootstrap server of its
 * own (HTTP, on a free loopback port) or under its own name in etcd. One room per pair first (every decode rank
 * resolves and reaches every prefill instance it serves), then rooms spread at random across all pairs, every byte
 * checked. Per size: connections, threads, heap and direct memory, registry requests (first contact and per room
 * after it) and rooms per second, so that whatever grows faster than the fleet shows.
 */
final class FleetBench {

	/** Thread names of the HTTP bootstrap servers: one per prefill instance, as each runs in its own process. */
	static final String SERVER_THREADS = "kvferry-bootstrap";
	static final Duration START_TIMEOUT = Duration.ofSeconds(120);
	static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(30);
	/**
	 * Each etcd call's bound: a fleet registers hundreds of ranks at once through one etcd connection, and a loaded
	 * machine answers them slower than the registry's default allows.
	 */
	static final Duration ETCD_TIMEOUT = Duration.ofSeconds(30);

	/** A small model: what grows with the fleet is under test, not the bytes of a room. */
	static final ModelShape SHAPE = new ModelShape(2, 8, 32, 2, 16, false, 0, 16, 0);

	/** What to run at each size. */
	record Settings(int tp, int rooms, int concurrency, int tokens, String etcd, Function<String, BootstrapClient> etcdClient) {
	}

	/**
	 * What one size measured.
	 *
	 * @param instances prefill instances (and as many decode ones)
	 * @param ranks managers of the fleet
	 * @param rooms timed rooms (after one per pair)
	 * @param failures rooms that failed or did not verify, timed and first-contact alike
	 * @param firstFailure the first failure's reason, or null
	 * @param roomsPerSecond timed rooms per second
	 * @param connections open connections after the rooms
	 * @param threads live threads of the JVM after the rooms
	 * @param serverThreads of which the HTTP bootstrap servers' (one per prefill instance)
	 * @param heapBytes heap in use after a GC
	 * @param directBytes direct memory in use (rank memory included)
	 * @param rankMemoryBytes the ranks' KV, aux and state memory
	 * @param registrations register calls (each prefill rank at start, then every re-registration interval)
	 * @param firstContactLookups look-ups during the first room of every pair
	 * @param timedLookups look-ups during the timed rooms
	 * @param serverRequests HTTP requests the bootstrap servers answered (-1 with etcd)
	 * @param pools live threads by name with the digits taken out (a pool's threads under one name)
	 */
	record Row(int instances, int ranks, int rooms, int failures, String firstFailure, double roomsPerSecond,
			int connections, int threads, int serverThreads, long heapBytes, long directBytes, long rankMemoryBytes,
			long registrations, long firstContactLookups, long timedLookups, long serverRequests,
			Map<String, Integer> pools) {

		double lookupsPerTimedRoom() {
			return rooms == 0 ? 0 : (double) timedLookups / rooms;
		}
	}

	private FleetBench() {
	}

	/** Runs one size and closes everything it started. */
	static Row run(int instances, Settings s) {
		List<DisposableBootstrapServer> servers = new ArrayList<>();
		List<SimpleMeterRegistry> meters = new ArrayList<>();
		List<HostPort> bootstraps = new ArrayList<>();
		BootstrapClient registry;
		Disposable owned;
		if (s.etcd() == null) {
			for (int i = 0; i < instances; i++) {
				SimpleMeterRegistry m = new SimpleMeterRegistry();
				DisposableBootstrapServer server = BootstrapServer.create().host("127.0.0.1").port(0).metrics(m)
						.bindNow(START_TIMEOUT);
				servers.add(server);
				meters.add(m);
				bootstraps.add(server.address());
			}
			ReactorBootstrapClient http = ReactorBootstrapClient.create();
			registry = http;
			owned = http;
		}
		else {
			// Names, not servers: etcd keys every instance by the address decode names it with.
			for (int i = 0; i < instances; i++) {
				bootstraps.add(new HostPort("prefill-" + i + ".fleet", 8998));
			}
			registry = s.etcdClient().apply("kvferry-fleet-" + Long.toHexString(System.nanoTime()));
			owned = (Disposable) registry;
		}
		CountingBootstrapClient counting = new CountingBootstrapClient(registry);
		// Each connection side delivers on a serial worker of the parallel scheduler: threads stay the cores'.
		InMemoryKVTransport transport = InMemoryKVTransport.create(Schedulers.parallel());
		int pages = (s.tokens() + SHAPE.pageSize() - 1) / SHAPE.pageSize();
		// Enough pages for every room in flight to land on one instance: a random spread never runs out.
		int pool = pages * s.concurrency() + 1;
		KVFleet fleet = null;
		try {
			fleet = KVFleet.builder().shape(SHAPE).instances(instances, instances).tp(s.tp())
					.capacity(pool, s.concurrency() + 1).transport(transport).bootstrapClient(counting)
					.bootstrapAddresses(bootstraps).start().block(START_TIMEOUT);
			long rankMemory = 2L * instances * (DirectMemory.instanceBytes(SHAPE, s.tp(), 1, 1, pool)
					+ (long) s.tp() * (s.concurrency() + 1) * SHAPE.auxItemLen());
			AtomicLong room = new AtomicLong(1);
			List<String> failures = new ArrayList<>();
			// First contact: one room per pair, so that every decode rank has resolved every prefill instance.
			List<int[]> pairs = new ArrayList<>();
			for (int p = 0; p < instances; p++) {
				for (int d = 0; d < instances; d++) {
					pairs.add(new int[] { p, d });
				}
			}
			long lookups0 = counting.lookups();
			rooms(fleet, pairs, s, room, failures);
			long firstContact = counting.lookups() - lookups0;
			Random random = new Random(instances);
			List<int[]> spread = new ArrayList<>();
			for (int i = 0; i < s.rooms(); i++) {
				spread.add(new int[] { random.nextInt(instances), random.nextInt(instances) });
			}
			long lookups1 = counting.lookups();
			long start = System.nanoTime();
			rooms(fleet, spread, s, room, failures);
			double seconds = (System.nanoTime() - start) / 1e9;
			long timed = counting.lookups() - lookups1;
			int[] threads = threads();
			System.gc();
			long heap = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
			long direct = DirectMemory.used() + Math.max(0, PlatformDependent.usedDirectMemory());
			long served = servers.isEmpty() ? -1 : meters.stream().mapToLong(FleetBench::requests).sum();
			return new Row(instances, fleet.managers().size(), s.rooms(), failures.size(),
					failures.isEmpty() ? null : failures.get(0), s.rooms() / seconds, transport.openConnections() / 2,
					threads[0], threads[1], heap, direct, rankMemory, counting.registrations(), firstContact, timed,
					served, pools());
		}
		finally {
			try {
				if (fleet != null) {
					Closing.await(fleet.close(), CLOSE_TIMEOUT, "the fleet's KV managers");
				}
			}
			finally {
				servers.forEach(server -> server.disposeNow(CLOSE_TIMEOUT));
				owned.dispose();
			}
		}
	}

	/** Runs rooms between the given pairs, {@code concurrency} at a time; adds each failure's reason. */
	private static void rooms(KVFleet fleet, List<int[]> pairs, Settings s, AtomicLong room, List<String> failures) {
		List<RoomResult> results = Flux.fromIterable(pairs)
				.flatMap(pair -> {
					long id = room.getAndIncrement();
					return fleet.run(id, pair[0], pair[1], s.tokens(), new Random(id));
				}, s.concurrency())
				.collectList()
				.block(START_TIMEOUT.multipliedBy(10));
		for (RoomResult r : results) {
			if (!r.ok()) {
				failures.add("room " + r.room() + ": " + r.failure());
			}
		}
	}

	private static long requests(SimpleMeterRegistry meters) {
		return (long) meters.find("kvferry.bootstrap.requests").counters().stream().mapToDouble(Counter::count).sum();
	}

	/**
	 * @return {live threads, of which the bootstrap servers'}; without Netty's global executor, a single thread that
	 *         runs one-off tasks (a closed server's clean-up) and exits after a second idle: whether it is alive at the
	 *         moment of counting is timing, not growth
	 */
	static int[] threads() {
		int all = 0;
		int servers = 0;
		for (Thread t : Thread.getAllStackTraces().keySet()) {
			if (t.isAlive() && !t.getName().startsWith("globalEventExecutor")) {
				all++;
				if (t.getName().startsWith(SERVER_THREADS)) {
					servers++;
				}
			}
		}
		return new int[] { all, servers };
	}

	/** @return live threads by name with the digits taken out, most first */
	static Map<String, Integer> pools() {
		Map<String, Integer> pools = new TreeMap<>();
		for (Thread t : Thread.getAllStackTraces().keySet()) {
			if (t.isAlive()) {
				pools.merge(t.getName().replaceAll("[0-9]+", "N"), 1, Integer::sum);
			}
		}
		Map<String, Integer> sorted = new LinkedHashMap<>();
		pools.entrySet().stream().sorted(Map.Entry.<String, Integer>comparingByValue().reversed())
				.forEach(e -> sorted.put(e.getKey(), e.getValue()));
		return sorted;
	}

	/** Settles lazily started threads (schedulers' workers, pools) before the first size is measured. */
	static Mono<Void> warmUp(Settings s) {
		return Mono.fromRunnable(() -> run(1, new Settings(s.tp(), 16, 4, s.tokens(), s.etcd(), s.etcdClient())));
	}
}
