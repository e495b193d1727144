package io.kvferry.cli;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.UnaryOperator;

import io.kvferry.DisaggregationMode;
import io.kvferry.FailureCause;
import io.kvferry.HostPort;
import io.kvferry.KVArgs;
import io.kvferry.KVLayout;
import io.kvferry.PrefillKVManager;
import io.kvferry.PrefillSpec;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVSender;
import io.kvferry.ParallelLayout;
import io.kvferry.RoomRequest;
import io.kvferry.bootstrap.BootstrapClient;
import io.kvferry.spi.KVTransport;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.PageAllocator;
import io.kvferry.harness.RankMemory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * The "engine" of a prefill instance, as small as it can be: for every room decode asks for, it allocates pages, writes
 * the room's deterministic pattern into them (standing in for the forward pass), and hands them to the ranks' senders
 * chunk by chunk. Ranks of one DP group share one page table, as an engine's scheduler allocates one set of page
 * indices for all TP and PP ranks of a request.
 *
 * <p>Threading: requests arrive on transport threads and are handed to one serial worker per DP group, which owns that
 * group's pools and queue; pattern fills run on the parallel scheduler. Requests that do not fit the pool wait in
 * arrival order.
 */
final class PrefillEngine {

	private static final Logger log = LoggerFactory.getLogger(PrefillEngine.class);
	private static final int[] NO_STATE = new int[0];
	private static final int ENDED_ROOMS_KEPT = 65_536;

	private final int chunkPages;
	private final Duration layerCompute;
	private final boolean layerwise;
	private final List<Group> groups = new ArrayList<>();
	private final List<Disposable> subscriptions = new ArrayList<>();
	private final AtomicLong served = new AtomicLong();
	private final AtomicLong failed = new AtomicLong();
	private final AtomicLong bytes = new AtomicLong();

	private PrefillEngine(int chunkPages, Duration layerCompute, boolean layerwise) {
		this.chunkPages = chunkPages;
		this.layerCompute = layerCompute;
		this.layerwise = layerwise;
	}

	/** One rank: its manager and its registered memory. */
	private record Rank(PrefillKVManager manager, RankMemory memory) {
	}

	/**
	 * Starts every rank (listen, register with the bootstrap server) and begins serving.
	 *
	 * @param config what to start
	 * @return the running engine
	 */
	static Mono<PrefillEngine> start(Config config) {
		return Mono.defer(() -> {
			int chunkPages = Math.max(1, config.chunkTokens() / config.shape().pageSize());
			PrefillEngine engine = new PrefillEngine(chunkPages, config.layerCompute(), config.layerwise());
			List<Mono<PrefillKVManager>> starts = new ArrayList<>();
			int rows = config.auxRows();
			for (int g = 0; g < config.dp(); g++) {
				Group group = engine.new Group(g, config.tp() * config.pp() * config.cp(), config.poolPages(), rows,
						config.shape().pageSize());
				engine.groups.add(group);
				for (int cp = 0; cp < config.cp(); cp++) {
					for (int tp = 0; tp < config.tp(); tp++) {
						for (int pp = 0; pp < config.pp(); pp++) {
							ParallelLayout layout = new ParallelLayout(config.tp(), tp, config.dp(), g, 1, 0,
									config.pp(), pp, config.cp(), cp);
							RankMemory memory = RankMemory.prefill(config.shape(), layout, config.kvLayout(),
									config.poolPages(), rows, rows);
							PrefillSpec spec = (PrefillSpec) config.customizer().apply(KVManagerSpec.prefill()
									.kvArgs(memory.kvArgs()).layout(layout).transport(config.transport())
									.bootstrapClient(config.client()).bootstrapAddress(config.bootstrap())
									.bindAddress(new HostPort(config.bindHost(), 0))
									.allCpRanksTransfer(config.allCpRanks()));
							if (config.advertiseHosts() != null && !config.advertiseHosts().isEmpty()) {
								spec = spec.advertiseHosts(config.advertiseHosts());
							}
							// Subscribe as soon as the rank is up, before decode can know it exists.
							starts.add(spec.start().doOnNext(m -> engine.attach(group, new Rank(m, memory))));
						}
					}
				}
			}
			return Flux.merge(starts).then(Mono.just(engine))
					.onErrorResume(e -> engine.close().then(Mono.error(e)));
		});
	}

	private synchronized void attach(Group group, Rank rank) {
		group.ranks.add(rank);
		subscriptions.add(rank.manager.roomRequests().subscribe(group::offer));
		group.worker.schedule(group::drain);
	}

	/** Hands a DP group a room request, as its ranks' request streams do. */
	void offer(int group, RoomRequest request) {
		groups.get(group).offer(request);
	}

	/** @return every rank's manager, DP group by group */
	synchronized List<PrefillKVManager> managers() {
		List<PrefillKVManager> all = new ArrayList<>();
		groups.forEach(g -> g.ranks.forEach(r -> all.add(r.manager)));
		return all;
	}

	/** @return rooms whose every rank succeeded */
	long served() {
		return served.get();
	}

	/** @return rooms that failed on some rank */
	long failed() {
		return failed.get();
	}

	/** @return KV bytes sent by rooms that succeeded, all ranks */
	long bytes() {
		return bytes.get();
	}

	/**
	 * Drains every rank: no new room is admitted (decode is told), rooms in flight are served, and those still running
	 * after {@code deadline} are aborted with the reason.
	 *
	 * @return completes when every rank's last room ended
	 */
	Mono<Void> drain(Duration deadline) {
		return Mono.defer(() -> Mono.when(managers().stream().map(m -> m.drain(deadline)).toList()));
	}

	/** @return rooms that were aborted because a drain's deadline passed or that a draining rank refused, all ranks */
	long drainFailures() {
		return managers().stream().mapToLong(m -> m.stats().failures().get(FailureCause.DRAINING)).sum();
	}

	/** @return rooms live on some rank now */
	int roomsInFlight() {
		return managers().stream().mapToInt(m -> m.stats().liveRooms().values().stream().mapToInt(Integer::intValue).sum())
				.max().orElse(0);
	}

	/** Stops serving and closes every manager (failing live rooms). */
	Mono<Void> close() {
		return Mono.defer(() -> {
			List<Mono<Void>> closing = new ArrayList<>();
			synchronized (this) {
				subscriptions.forEach(Disposable::dispose);
				groups.forEach(g -> g.ranks.forEach(r -> {
					r.manager.dispose();
					closing.add(r.manager.onDispose());
				}));
			}
			// Workers last: failing rooms still hand their pages back through them.
			return Mono.whenDelayError(closing).doFinally(s -> groups.forEach(g -> g.worker.dispose()));
		});
	}

	/** One DP group: its ranks, its page table and its queue, owned by one serial worker. */
	private final class Group {

		final int index;
		final int rankCount;
		final List<Rank> ranks = new CopyOnWriteArrayList<>();
		final Scheduler.Worker worker = Schedulers.parallel().createWorker();
		final int capacity;
		final int pageSize;
		// Worker-confined.
		final PageAllocator pages;
		final PageAllocator rows;
		final Map<Long, RoomRequest> queue = new LinkedHashMap<>();
		final Set<Long> active = new HashSet<>();
		// Rooms this group served or turned away. Every rank of the group hears decode's request for a room, and a
		// slow rank's may come after the room ended; rooms are never reused, so such a request is a late copy.
		final Set<Long> ended = Collections.newSetFromMap(new LinkedHashMap<>() {

			private static final long serialVersionUID = 1L;

			@Override
			protected boolean removeEldestEntry(Map.Entry<Long, Boolean> eldest) {
				return size() > ENDED_ROOMS_KEPT;
			}
		});

		Group(int index, int rankCount, int capacity, int auxRows, int pageSize) {
			this.index = index;
			this.pageSize = pageSize;
			this.rankCount = rankCount;
			this.capacity = capacity;
			this.pages = new PageAllocator(capacity);
			this.rows = new PageAllocator(auxRows);
		}

		void offer(RoomRequest request) {
			worker.schedule(() -> {
				// Dummy destinations carry no page count; every rank of the group gets a real request too.
				if (request.dummy() || active.contains(request.room()) || queue.containsKey(request.room())
						|| ended.contains(request.room())) {
					return;
				}
				queue.put(request.room(), request);
				drain();
			});
		}

		void drain() {
			// A rank still registering cannot have been asked yet, but its peers may: serve only with all ranks.
			if (ranks.size() < rankCount) {
				return;
			}
			Iterator<RoomRequest> it = queue.values().iterator();
			while (it.hasNext()) {
				RoomRequest request = it.next();
				// The engine computes every page of the prompt; those of decode's prefix are not sent. Its pages hold
				// the tokens of decode's pages, whatever the two page sizes.
				int roomPages = request.pages(pageSize);
				if (roomPages > capacity) {
					it.remove();
					reject(request, "room " + request.room() + " needs " + roomPages
							+ " pages but prefill DP group " + index + " holds " + capacity + " (raise --pool-tokens)");
					continue;
				}
				// Pages scattered as an engine's allocator would (one room in four contiguous), reproducibly per room.
				Random random = new Random(request.room());
				int[] src = pages.allocate(roomPages, random, random.nextInt(4) == 0);
				if (src == null) {
					return;
				}
				int[] row = rows.allocate(1, random, false);
				if (row == null) {
					pages.release(src);
					return;
				}
				it.remove();
				serve(request, src, row[0]);
			}
		}

		private void reject(RoomRequest request, String reason) {
			log.warn("[prefill dp{}] {}", index, reason);
			ended.add(request.room());
			failed.incrementAndGet();
			for (Rank r : ranks) {
				try {
					r.manager.sender(request.room()).abort(reason);
				}
				catch (IllegalStateException e) {
					log.debug("[prefill dp{}] room {} already ended: {}", index, request.room(), e.getMessage());
				}
			}
		}

		private void serve(RoomRequest request, int[] src, int row) {
			long room = request.room();
			active.add(room);
			List<KVSender> senders = new ArrayList<>(ranks.size());
			List<KVArgs> args = new ArrayList<>(ranks.size());
			try {
				for (Rank r : ranks) {
					senders.add(r.manager.sender(room));
					args.add(r.memory.kvArgs());
				}
			}
			catch (IllegalStateException e) {
				// Decode gave up on the room (timeout, abort) before it was served.
				log.info("[prefill dp{}] room {} not served: {}", index, room, e.getMessage());
				senders.forEach(s -> s.abort("prefill could not serve room " + room + ": " + e.getMessage()));
				failed.incrementAndGet();
				release(room, src, row);
				return;
			}
			long start = System.nanoTime();
			Flux.fromIterable(ranks)
					.flatMap(r -> Mono.fromRunnable(() -> r.memory.fill(room, src, row, state(row)))
							.subscribeOn(Schedulers.parallel()))
					.then(send(senders, args, src, row))
					.then(Mono.whenDelayError(senders.stream().map(KVSender::completion).toList()))
					.subscribe(null, e -> worker.schedule(() -> {
						failed.incrementAndGet();
						log.warn("[prefill dp{}] room {} failed: {}", index, room, e.getMessage());
						release(room, src, row);
					}), () -> worker.schedule(() -> {
						served.incrementAndGet();
						long sent = ranks.stream().mapToLong(r -> r.memory.kvBytes(src.length)).sum();
						bytes.addAndGet(sent);
						log.info("[prefill dp{}] room {}: {} pages, {} in {} ms", index, room, src.length,
								Sizes.bytes(sent), Duration.ofNanos(System.nanoTime() - start).toMillis());
						release(room, src, row);
					}));
		}

		/**
		 * Sends the room chunk by chunk, the state with the last; with a layer compute time or layer-wise, as each
		 * chunk's layers are done.
		 */
		private Mono<Void> send(List<KVSender> senders, List<KVArgs> args, int[] src, int row) {
			return Mono.defer(() -> {
				List<int[]> chunks = new ArrayList<>();
				for (int from = 0; from < src.length; from += chunkPages) {
					chunks.add(Arrays.copyOfRange(src, from, Math.min(src.length, from + chunkPages)));
				}
				if (chunks.isEmpty()) {
					chunks.add(src);
				}
				senders.forEach(s -> s.init(src.length, row));
				int last = chunks.size() - 1;
				if (layerCompute.isZero() && !layerwise) {
					for (int i = 0; i <= last; i++) {
						int[] chunk = chunks.get(i);
						int[] state = i == last ? state(row) : NO_STATE;
						senders.forEach(s -> s.send(chunk, state));
					}
					return Mono.empty();
				}
				return Flux.range(0, chunks.size()).concatMap(i -> LayerCompute.forward(senders, args, chunks.get(i),
						i == last ? state(row) : NO_STATE, layerCompute, layerwise, Schedulers.parallel())).then();
			});
		}

		/** A hybrid model's Mamba state lives in the slot of the room's aux row. */
		private int[] state(int row) {
			return ranks.get(0).memory.kvArgs().stateRegions().isEmpty() ? NO_STATE : new int[] { row };
		}

		private void release(long room, int[] src, int row) {
			active.remove(room);
			ended.add(room);
			pages.release(src);
			rows.release(new int[] { row });
			drain();
		}
	}

	/**
	 * What to start.
	 *
	 * @param shape the model
	 * @param tp attention TP size
	 * @param pp PP size
	 * @param dp attention DP size
	 * @param cp attention CP size
	 * @param allCpRanks every CP rank sends its share of each room
	 * @param poolPages pages per layer buffer on every rank (the page table of a DP group)
	 * @param auxRows aux rows on every rank
	 * @param chunkTokens tokens per {@code send} call
	 * @param bindHost address every rank listens on (free port each)
	 * @param advertiseHosts addresses decode should dial, one per network interface, or null for the default
	 * @param bootstrap the bootstrap server to register with
	 * @param transport shared transport (not disposed by the engine)
	 * @param client shared bootstrap client (not disposed by the engine)
	 * @param customizer adjusts every manager's spec (timeouts)
	 * @param layerCompute compute time of one model layer, on a timer (zero: none)
	 * @param layerwise send each layer of a chunk as soon as it is computed
	 * @param kvLayout how every rank orders its KV pages
	 */
	record Config(ModelShape shape, int tp, int pp, int dp, int cp, boolean allCpRanks, int poolPages, int auxRows,
			int chunkTokens,
			String bindHost, List<String> advertiseHosts, HostPort bootstrap, KVTransport transport,
			BootstrapClient client, UnaryOperator<KVManagerSpec<?, ?>> customizer, Duration layerCompute,
			boolean layerwise, KVLayout kvLayout) {

		/** Token-major KV pages. */
		Config(ModelShape shape, int tp, int pp, int dp, int cp, boolean allCpRanks, int poolPages, int auxRows,
				int chunkTokens, String bindHost, List<String> advertiseHosts, HostPort bootstrap,
				KVTransport transport, BootstrapClient client, UnaryOperator<KVManagerSpec<?, ?>> customizer,
				Duration layerCompute, boolean layerwise) {
			this(shape, tp, pp, dp, cp, allCpRanks, poolPages, auxRows, chunkTokens, bindHost, advertiseHosts,
					bootstrap, transport, client, customizer, layerCompute, layerwise, KVLayout.NHD);
		}

		/** Without compute time, whole chunks. */
		Config(ModelShape shape, int tp, int pp, int dp, int cp, boolean allCpRanks, int poolPages, int auxRows,
				int chunkTokens, String bindHost, List<String> advertiseHosts, HostPort bootstrap, KVTransport transport,
				BootstrapClient client, UnaryOperator<KVManagerSpec<?, ?>> customizer) {
			this(shape, tp, pp, dp, cp, allCpRanks, poolPages, auxRows, chunkTokens, bindHost, advertiseHosts,
					bootstrap, transport, client, customizer, Duration.ZERO, false);
		}
	}
}
