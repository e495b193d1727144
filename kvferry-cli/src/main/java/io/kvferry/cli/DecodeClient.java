package io.kvferry.cli;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.UnaryOperator;
import java.util.stream.Collectors;

import io.kvferry.DisaggregationMode;
import io.kvferry.HostPort;
import io.kvferry.DecodeKVManager;
import io.kvferry.DecodeSpec;
import io.kvferry.KVLayout;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVReceiver;
import io.kvferry.ParallelLayout;
import io.kvferry.RoomPhases;
import io.kvferry.bootstrap.BootstrapClient;
import io.kvferry.spi.KVTransport;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.PageAllocator;
import io.kvferry.harness.RankMemory;
import io.kvferry.harness.RoomResult;
import reactor.core.Exceptions;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Schedulers;

/**
 * A decode instance that asks a prefill instance for rooms and checks them: for each room it allocates destination
 * pages (one page table for all its ranks), opens a receiver on every rank, sends the destinations, waits for every
 * rank's terminal state and verifies every byte against the pattern the room's prefill wrote. It needs no knowledge of
 * prefill's pages: the pattern depends only on what the bytes mean.
 *
 * <p>Thread-safe: rooms may run concurrently; verification runs on the parallel scheduler.
 */
final class DecodeClient {

	private static final int[] NO_STATE = new int[0];

	private final ModelShape shape;
	// Replaced only by reregister, while no room runs.
	private final List<RankMemory> memory = new ArrayList<>();
	private final List<DecodeKVManager> managers = new ArrayList<>();
	private final PageAllocator pages;
	private final PageAllocator rows;
	private volatile double decodePrefix;
	// Admission: once closed, no room starts; rooms past the check are counted until their receivers exist, so that
	// a drain begun after closeAdmission() completes can never refuse a room this client already started.
	private volatile boolean admitting = true;
	private final AtomicInteger starting = new AtomicInteger();
	// Set once a room's prefill ranks were found and connected on some rank.
	private final AtomicBoolean reachedPrefill = new AtomicBoolean();
	private final Sinks.Empty<Void> noneStarting = Sinks.empty();

	private final int poolPages;
	private final int auxRows;

	private DecodeClient(ModelShape shape, int poolPages, int auxRows) {
		this.shape = shape;
		this.poolPages = poolPages;
		this.auxRows = auxRows;
		this.pages = new PageAllocator(poolPages);
		this.rows = new PageAllocator(auxRows);
	}

	/**
	 * Starts one decode manager per rank.
	 *
	 * @param shape the model (the same as prefill's)
	 * @param tp decode attention TP size
	 * @param pp decode PP size
	 * @param poolPages pages per layer buffer on every rank
	 * @param auxRows aux rows on every rank
	 * @param transport shared transport (not disposed here)
	 * @param client shared bootstrap client (not disposed here)
	 * @param customizer adjusts every manager's spec (timeouts)
	 * @return the started client
	 */
	static Mono<DecodeClient> start(ModelShape shape, int tp, int pp, int poolPages, int auxRows, KVTransport transport,
			BootstrapClient client, UnaryOperator<KVManagerSpec<?, ?>> customizer) {
		return start(shape, tp, pp, KVLayout.NHD, poolPages, auxRows, transport, client, customizer);
	}

	/**
	 * As {@link #start(ModelShape, int, int, int, int, KVTransport, BootstrapClient, UnaryOperator)}, every rank's KV
	 * pages ordered as {@code kvLayout} says (and checked in that order).
	 */
	static Mono<DecodeClient> start(ModelShape shape, int tp, int pp, KVLayout kvLayout, int poolPages, int auxRows,
			KVTransport transport, BootstrapClient client, UnaryOperator<KVManagerSpec<?, ?>> customizer) {
		return Mono.defer(() -> {
			DecodeClient c = new DecodeClient(shape, poolPages, auxRows);
			List<Mono<DecodeKVManager>> starts = new ArrayList<>();
			for (int t = 0; t < tp; t++) {
				for (int p = 0; p < pp; p++) {
					ParallelLayout layout = new ParallelLayout(tp, t, 1, 0, 1, 0, pp, p);
					RankMemory mem = RankMemory.decode(shape, layout, kvLayout, poolPages, auxRows, auxRows);
					c.memory.add(mem);
					c.managers.add(null);
					int slot = c.managers.size() - 1;
					starts.add(((DecodeSpec) customizer.apply(KVManagerSpec.decode()
							.kvArgs(mem.kvArgs()).layout(layout).transport(transport).bootstrapClient(client)))
							.start().doOnNext(m -> c.managers.set(slot, m)));
				}
			}
			return Flux.concat(starts).then(Mono.just(c)).onErrorResume(e -> c.close().then(Mono.error(e)));
		});
	}

	/**
	 * @param fraction share of each room's pages this decode instance already holds (rounded down to whole pages; 1 is
	 *        a full hit): it asks prefill only for the rest
	 * @return this client
	 */
	DecodeClient decodePrefix(double fraction) {
		this.decodePrefix = fraction;
		return this;
	}

	/**
	 * Runs one room. Never errors: a failure is in the result. Every room's pages are free again by the time its result
	 * comes: a failed room's once every rank's abort was acknowledged (until then prefill might still write them), a
	 * room whose bytes differ once checked (prefill writes nothing after Success).
	 *
	 * @param bootstrap the prefill instance's bootstrap server
	 * @param room the room (new to the prefill instance)
	 * @param tokens prompt tokens
	 * @return the result, after every byte was checked; empty when the room did not start (admission closed)
	 */
	Mono<RoomResult> run(HostPort bootstrap, long room, int tokens) {
		return Mono.defer(() -> {
			starting.incrementAndGet();
			try {
				return admitting ? start(bootstrap, room, tokens) : Mono.<RoomResult>empty();
			}
			finally {
				if (starting.decrementAndGet() == 0 && !admitting) {
					noneStarting.tryEmitEmpty();
				}
			}
		});
	}

	/**
	 * Starts no new room: {@link #run} is empty from now on.
	 *
	 * @return completes once every room that did start has its receivers (lazy: closes admission on subscription)
	 */
	Mono<Void> closeAdmission() {
		return Mono.defer(() -> {
			admitting = false;
			if (starting.get() == 0) {
				noneStarting.tryEmitEmpty();
			}
			return noneStarting.asMono();
		});
	}

	private Mono<RoomResult> start(HostPort bootstrap, long room, int tokens) {
		int numPages = (tokens + shape.pageSize() - 1) / shape.pageSize();
		int prefixPages = (int) Math.floor(numPages * decodePrefix);
		Random random = new Random(room);
		int[] dst = pages.allocate(numPages - prefixPages, random, random.nextInt(4) == 0);
		int[] row = rows.allocate(1, random, false);
		if (dst == null || row == null) {
			free(dst, row);
			return Mono.just(new RoomResult(room, numPages, 0, 0, "decode pool has no room for " + numPages
					+ " pages"));
		}
		long start = System.nanoTime();
		List<KVReceiver> receivers = new ArrayList<>(managers.size());
		try {
			for (DecodeKVManager m : managers) {
				KVReceiver r = m.receiver(bootstrap, room);
				receivers.add(r);
				r.sendMetadata(prefixPages * shape.pageSize(), dst, row[0], new int[][] { state(row) });
			}
		}
		catch (RuntimeException e) {
			// A room id the managers already know, or bad indices: ranks asked before the failure may already write.
			String reason = describe(e);
			return abort(receivers, reason)
					.then(Mono.fromRunnable(() -> free(dst, row)))
					.thenReturn(new RoomResult(room, numPages, 0, 0, reason));
		}
		return Mono.whenDelayError(receivers.stream().map(KVReceiver::completion).toList())
				.doOnTerminate(() -> noteReached(receivers))
				.then(Mono.fromCallable(() -> verify(room, dst, prefixPages, row, System.nanoTime() - start,
						slowest(receivers))).subscribeOn(Schedulers.parallel()))
				.onErrorResume(e -> {
					long latency = System.nanoTime() - start;
					String reason = describe(e);
					// The room is failed on every rank; its pages are reusable once prefill can no longer write.
					return abort(receivers, reason)
							.then(Mono.fromRunnable(() -> free(dst, row)))
							.then(Mono.fromCallable(() -> new RoomResult(room, numPages, 0, latency, reason,
									slowest(receivers))));
				});
	}

	/** Notes whether a room that ended got as far as its prefill ranks on some decode rank. */
	private void noteReached(List<KVReceiver> receivers) {
		for (KVReceiver r : receivers) {
			if (r.phases().has(RoomPhases.Phase.WAITING_FOR_PEER)) {
				reachedPrefill.set(true);
				return;
			}
		}
	}

	/**
	 * @return whether some room got as far as its prefill ranks (found and connected), whatever then became of it:
	 *         false means this decode instance never reached the prefill instance
	 */
	boolean reachedPrefill() {
		return reachedPrefill.get();
	}

	/**
	 * Aborts the room on every rank.
	 *
	 * @return completes once each rank's room ended (a failed room's completion errors only once its pages are
	 *         safe to reuse)
	 */
	private static Mono<Void> abort(List<KVReceiver> receivers, String reason) {
		receivers.forEach(r -> r.abort(reason));
		return Mono.when(receivers.stream().map(r -> r.completion().onErrorResume(e -> Mono.empty())).toList());
	}

	/**
	 * The phases of the rank whose room took longest: it is the one the room's latency waited for, and one rank's
	 * phases add up to its own duration, which a phase-by-phase maximum across ranks would not.
	 *
	 * @param receivers the room's receivers, one per rank
	 * @return those phases, or {@link RoomPhases#NONE} when no rank's room ended
	 */
	private static RoomPhases slowest(List<KVReceiver> receivers) {
		RoomPhases slowest = RoomPhases.NONE;
		for (KVReceiver r : receivers) {
			RoomPhases p = r.phases();
			if (p.total().compareTo(slowest.total()) > 0) {
				slowest = p;
			}
		}
		return slowest;
	}

	/** A hybrid model's Mamba state goes to the slot of the room's aux row. */
	private int[] state(int[] row) {
		return shape.mambaUnits() > 0 ? row : NO_STATE;
	}

	private RoomResult verify(long room, int[] dst, int prefixPages, int[] row, long latency, RoomPhases phases) {
		long bytes = 0;
		for (RankMemory mem : memory) {
			String mismatch = mem.verify(room, dst, prefixPages, row[0], state(row));
			if (mismatch != null) {
				// Reusable as they are: the pattern depends on the room, so these bytes never verify for another.
				free(dst, row);
				return new RoomResult(room, dst.length, bytes, latency, mismatch, phases);
			}
			bytes += mem.kvBytes(dst.length);
		}
		// No zeroing before reuse: the pattern depends on the room, so a stale page never verifies for another room.
		free(dst, row);
		return new RoomResult(room, dst.length, bytes, latency, null, phases);
	}

	private void free(int[] dst, int[] row) {
		if (dst != null) {
			pages.release(dst);
		}
		if (row != null) {
			rows.release(row);
		}
	}

	/** @return every distinct reason of a (possibly composite) failure, joined */
	static String describe(Throwable e) {
		return Exceptions.unwrapMultiple(e).stream()
				.map(t -> t.getMessage() == null ? t.toString() : t.getMessage())
				.distinct()
				.collect(Collectors.joining("; "));
	}

	/**
	 * Re-registers every rank's regions into a fresh pool of the same size, as an engine that swaps its pool does:
	 * later rooms land in, and are checked in, the new pools. Only while no room runs.
	 *
	 * @param deadline how long a room still in flight may take before its rank aborts it
	 * @return how long the re-registration took (not the allocation of the new pools, which is the engine's), once
	 *         every rank's rooms land in its new pool
	 */
	Mono<Duration> reregister(Duration deadline) {
		return Mono.defer(() -> {
			List<RankMemory> next = new ArrayList<>();
			for (RankMemory old : memory) {
				next.add(RankMemory.decode(shape, old.layout(), poolPages, auxRows, auxRows));
			}
			List<Mono<Integer>> swaps = new ArrayList<>();
			for (int i = 0; i < managers.size(); i++) {
				swaps.add(managers.get(i).reregister(next.get(i).kvArgs(), deadline));
			}
			long start = System.nanoTime();
			return Mono.when(swaps).then(Mono.fromCallable(() -> {
				Duration took = Duration.ofNanos(System.nanoTime() - start);
				for (int i = 0; i < next.size(); i++) {
					memory.set(i, next.get(i));
				}
				return took;
			}));
		});
	}

	/** @return each rank's registered memory, in the order of {@link #managers} */
	List<RankMemory> memory() {
		return memory;
	}

	/** @return the managers, one per rank */
	List<DecodeKVManager> managers() {
		return managers;
	}

	/** Closes every manager (not the transport nor the bootstrap client). */
	Mono<Void> close() {
		return Mono.defer(() -> Mono.whenDelayError(managers.stream().filter(m -> m != null)
				.map(m -> {
					m.dispose();
					return m.onDispose();
				}).toList()));
	}
}
