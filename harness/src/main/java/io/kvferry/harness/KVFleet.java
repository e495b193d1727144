package io.kvferry.harness;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Random;
import java.util.function.UnaryOperator;

import io.kvferry.DecodeKVManager;
import io.kvferry.DecodeSpec;
import io.kvferry.HostPort;
import io.kvferry.KVManager;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.ParallelLayout;
import io.kvferry.PrefillKVManager;
import io.kvferry.PrefillSpec;
import io.kvferry.bootstrap.BootstrapClient;
import io.kvferry.spi.KVTransport;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * Many prefill and decode instances in one process, each of TP ranks with their own managed memory, so that a room
 * can run between any prefill instance and any decode instance: a fleet as a router spreads rooms across it. Each
 * prefill instance registers under its own bootstrap address; every rank of every instance uses the one transport and
 * bootstrap client given. A room is checked byte for byte on every decode rank, as {@link KVCluster} checks it.
 *
 * <pre>{@code
 * KVFleet fleet = KVFleet.builder().shape(shape).instances(4, 4).tp(2).transport(transport)
 *         .bootstrapClient(client).bootstrapAddresses(addresses).start().block();
 * RoomResult r = fleet.run(room, 1, 3, 64, new Random(1)).block();
 * }</pre>
 */
public final class KVFleet {

	private final Builder config;
	private final List<Instance<PrefillKVManager>> prefill = new ArrayList<>();
	private final List<Instance<DecodeKVManager>> decode = new ArrayList<>();

	private KVFleet(Builder config) {
		this.config = config;
	}

	public static Builder builder() {
		return new Builder();
	}

	/** @return prefill instances */
	public int prefillInstances() {
		return prefill.size();
	}

	/** @return decode instances */
	public int decodeInstances() {
		return decode.size();
	}

	/** @return every manager of the fleet, prefill instances first (null for one that has not started yet) */
	public List<@Nullable KVManager> managers() {
		List<@Nullable KVManager> all = new ArrayList<>();
		prefill.forEach(i -> all.addAll(i.managers));
		decode.forEach(i -> all.addAll(i.managers));
		return all;
	}

	private Mono<KVFleet> startAll() {
		// The builder's start refused a builder without these.
		KVTransport transport = Objects.requireNonNull(config.transport, "transport");
		BootstrapClient client = Objects.requireNonNull(config.client, "bootstrapClient");
		List<Mono<? extends KVManager>> starts = new ArrayList<>();
		for (int i = 0; i < config.prefillInstances; i++) {
			Instance<PrefillKVManager> instance = new Instance<>(config.pages, config.rows);
			prefill.add(instance);
			HostPort bootstrap = config.bootstraps.get(i);
			for (int tp = 0; tp < config.tp; tp++) {
				ParallelLayout layout = new ParallelLayout(config.tp, tp, 1, 0, 1, 0, 1, 0);
				RankMemory mem = RankMemory.prefill(config.shape, layout, config.pages, config.rows, config.rows);
				PrefillSpec spec = custom(KVManagerSpec.prefill().kvArgs(mem.kvArgs()).layout(layout)
						.transport(transport).bootstrapClient(client).bootstrapAddress(bootstrap)
						.bindAddress(new HostPort(config.host, 0)).name("prefill-" + i + "-tp" + tp));
				starts.add(instance.add(mem, spec.start()));
			}
		}
		for (int i = 0; i < config.decodeInstances; i++) {
			Instance<DecodeKVManager> instance = new Instance<>(config.pages, config.rows);
			decode.add(instance);
			for (int tp = 0; tp < config.tp; tp++) {
				ParallelLayout layout = new ParallelLayout(config.tp, tp, 1, 0, 1, 0, 1, 0);
				RankMemory mem = RankMemory.decode(config.shape, layout, config.pages, config.rows, config.rows);
				DecodeSpec spec = custom(KVManagerSpec.decode().kvArgs(mem.kvArgs()).layout(layout)
						.transport(transport).bootstrapClient(client).name("decode-" + i + "-tp" + tp));
				starts.add(instance.add(mem, spec.start()));
			}
		}
		// Bounded concurrency: a fleet of hundreds of ranks registering at once would only queue at the registry.
		return Flux.fromIterable(starts).flatMap(m -> m, 16).then(Mono.just(this));
	}

	/** The builder's customizer applies to both roles' specs; it returns a spec of the role it was given. */
	@SuppressWarnings("unchecked")
	private <S extends KVManagerSpec<S, ?>> S custom(S spec) {
		return (S) config.customizer.apply(spec);
	}

	/**
	 * Runs one room from a prefill instance to a decode instance, end to end. Never errors: a failure is in the
	 * result.
	 *
	 * @param room the room (unique per fleet)
	 * @param from the prefill instance (0-based)
	 * @param to the decode instance (0-based)
	 * @param tokens prompt tokens (pages = ceil(tokens / page size))
	 * @param random page scattering
	 * @return the result after every rank of both instances finished and every decode rank's bytes were checked
	 */
	public Mono<RoomResult> run(long room, int from, int to, int tokens, Random random) {
		Objects.checkIndex(from, prefill.size());
		Objects.checkIndex(to, decode.size());
		return Mono.defer(() -> {
			Instance<PrefillKVManager> p = prefill.get(from);
			Instance<DecodeKVManager> d = decode.get(to);
			int numPages = (tokens + config.shape.pageSize() - 1) / config.shape.pageSize();
			boolean contiguous = random.nextBoolean();
			int @Nullable [] src = p.pages.allocate(numPages, random, contiguous);
			int @Nullable [] dst = d.pages.allocate(numPages, random, contiguous);
			int @Nullable [] srcRow = p.rows.allocate(1, random, false);
			int @Nullable [] dstRow = d.rows.allocate(1, random, false);
			if (src == null || dst == null || srcRow == null || dstRow == null) {
				release(p, d, src, dst, srcRow, dstRow);
				return Mono.just(new RoomResult(room, numPages, 0, 0, "out of pages for " + numPages + " pages"));
			}
			int[] srcState = config.shape.stateItemLen() == 0 ? new int[0] : srcRow;
			int[] dstState = config.shape.stateItemLen() == 0 ? new int[0] : dstRow;
			for (RankMemory mem : p.memory) {
				mem.fill(room, src, srcRow[0], srcState);
			}
			long start = System.nanoTime();
			List<Mono<Void>> done = new ArrayList<>();
			List<KVReceiver> receivers = new ArrayList<>();
			List<KVSender> senders = new ArrayList<>();
			for (DecodeKVManager m : d.managers) {
				KVReceiver receiver = m.receiver(config.bootstraps.get(from), room);
				receiver.sendMetadata(0, dst, dstRow[0], new int[][] { dstState });
				receivers.add(receiver);
			}
			for (PrefillKVManager m : p.managers) {
				KVSender sender = m.sender(room);
				sender.init(numPages, srcRow[0]);
				sender.send(src, new int[][] { srcState });
				senders.add(sender);
			}
			KVCluster.abortTogether(receivers, senders, done);
			long[] latency = new long[1];
			return Mono.whenDelayError(done)
					.doOnTerminate(() -> latency[0] = System.nanoTime() - start)
					.then(Mono.fromCallable(() -> verify(room, p, d, src, dst, srcRow, dstRow, dstState, latency[0]))
							.subscribeOn(Schedulers.parallel()))
					.onErrorResume(e -> {
						// A failed room's decode pages may hold part of it: they are not reused, as an engine would
						// recompute them first; the prefill pages go back.
						p.pages.release(src);
						p.rows.release(srcRow);
						return Mono.just(new RoomResult(room, numPages, 0, latency[0], KVCluster.describe(e)));
					});
		});
	}

	private RoomResult verify(long room, Instance<PrefillKVManager> p, Instance<DecodeKVManager> d, int[] src,
			int[] dst, int[] srcRow, int[] dstRow, int[] dstState, long latency) {
		long bytes = 0;
		for (RankMemory mem : d.memory) {
			String mismatch = mem.verify(room, dst, dstRow[0], dstState);
			if (mismatch != null) {
				return new RoomResult(room, src.length, bytes, latency, mismatch);
			}
			bytes += mem.kvBytes(dst.length);
		}
		// No zeroing before reuse: patterns depend on the room, so stale pages never verify.
		release(p, d, src, dst, srcRow, dstRow);
		return new RoomResult(room, src.length, bytes, latency, null);
	}

	private static void release(Instance<?> p, Instance<?> d, int @Nullable [] src, int @Nullable [] dst,
			int @Nullable [] srcRow, int @Nullable [] dstRow) {
		if (src != null) {
			p.pages.release(src);
		}
		if (dst != null) {
			d.pages.release(dst);
		}
		if (srcRow != null) {
			p.rows.release(srcRow);
		}
		if (dstRow != null) {
			d.rows.release(dstRow);
		}
	}

	/** Closes every manager (not the transport nor the bootstrap client); completes when they are released. */
	public Mono<Void> close() {
		return Mono.defer(() -> {
			List<Mono<Void>> released = new ArrayList<>();
			for (KVManager m : managers()) {
				if (m != null) {
					m.dispose();
					released.add(m.onDispose());
				}
			}
			return Mono.when(released);
		});
	}

	/** One instance's ranks (TP order), their memory and its page pools. */
	private static final class Instance<M extends KVManager> {
		final List<RankMemory> memory = new ArrayList<>();
		// Null until its rank started.
		final List<@Nullable M> managers = new ArrayList<>();
		final PageAllocator pages;
		final PageAllocator rows;

		Instance(int pages, int rows) {
			this.pages = new PageAllocator(pages);
			this.rows = new PageAllocator(rows);
		}

		/** Adds a rank whose manager is set once {@code start} gives it, in TP order whatever order they start in. */
		Mono<M> add(RankMemory mem, Mono<M> start) {
			memory.add(mem);
			managers.add(null);
			int slot = managers.size() - 1;
			return start.doOnNext(m -> {
				synchronized (managers) {
					managers.set(slot, m);
				}
			});
		}
	}

	/** Mutable builder of a {@link KVFleet}; not shared between threads while it is set up. */
	public static final class Builder {
		ModelShape shape = ModelShape.llama3_8b();
		int prefillInstances = 1;
		int decodeInstances = 1;
		int tp = 1;
		int pages = 64;
		int rows = 16;
		String host = "127.0.0.1";
		@Nullable KVTransport transport;
		@Nullable BootstrapClient client;
		List<HostPort> bootstraps = List.of();
		UnaryOperator<KVManagerSpec<?, ?>> customizer = UnaryOperator.identity();

		private Builder() {
		}

		public Builder shape(ModelShape shape) {
			this.shape = Objects.requireNonNull(shape, "shape");
			return this;
		}

		/** How many prefill and decode instances. */
		public Builder instances(int prefill, int decode) {
			if (prefill < 1 || decode < 1) {
				throw new IllegalArgumentException("instances : " + prefill + " prefill, " + decode + " decode "
						+ "(expected: >= 1 each)");
			}
			this.prefillInstances = prefill;
			this.decodeInstances = decode;
			return this;
		}

		/** Attention TP size of every instance, prefill and decode alike. */
		public Builder tp(int tp) {
			if (tp < 1) {
				throw new IllegalArgumentException("tp : " + tp + " (expected: >= 1)");
			}
			this.tp = tp;
			return this;
		}

		/** Pages per layer buffer on every rank, and aux rows / state slots. */
		public Builder capacity(int pages, int rows) {
			this.pages = pages;
			this.rows = rows;
			return this;
		}

		/** Host prefill ranks listen on (default 127.0.0.1). */
		public Builder host(String host) {
			this.host = Objects.requireNonNull(host, "host");
			return this;
		}

		/** Transport of every rank. */
		public Builder transport(KVTransport transport) {
			this.transport = Objects.requireNonNull(transport, "transport");
			return this;
		}

		/** Bootstrap client of every rank. */
		public Builder bootstrapClient(BootstrapClient client) {
			this.client = Objects.requireNonNull(client, "client");
			return this;
		}

		/** The bootstrap address of each prefill instance, in order: as many as {@link #instances} prefill ones. */
		public Builder bootstrapAddresses(List<HostPort> addresses) {
			this.bootstraps = List.copyOf(addresses);
			return this;
		}

		/** Adjusts every manager's spec (timeouts, timer). */
		public Builder customize(UnaryOperator<KVManagerSpec<?, ?>> customizer) {
			this.customizer = Objects.requireNonNull(customizer, "customizer");
			return this;
		}

		/**
		 * @return the started fleet (every prefill rank registered)
		 * @throws IllegalArgumentException at subscription when the bootstrap addresses are not one per prefill
		 *         instance
		 */
		public Mono<KVFleet> start() {
			Objects.requireNonNull(transport, "transport");
			Objects.requireNonNull(client, "bootstrapClient");
			return Mono.defer(() -> {
				if (bootstraps.size() != prefillInstances) {
					return Mono.error(new IllegalArgumentException("bootstrapAddresses : " + bootstraps.size()
							+ " (expected: one per prefill instance, " + prefillInstances + ")"));
				}
				KVFleet fleet = new KVFleet(this);
				// A fleet that failed halfway closes the managers it started.
				return fleet.startAll().onErrorResume(e -> fleet.close().then(Mono.error(e)));
			});
		}
	}
}
