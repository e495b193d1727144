package io.kvferry.harness;

import java.util.List;
import java.util.Objects;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;

import io.kvferry.DecodeKVManager;
import io.kvferry.HostPort;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.PrefillKVManager;
import io.kvferry.RoomPriority;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * A prefill instance and a decode instance of any parallel layout, each rank with its own managed memory, that runs
 * whole rooms: pattern fill on every prefill rank of the room's DP group, receivers on every decode rank, chunked
 * sends, and a byte-exact check of every decode rank's pages, aux row and state slots. The cluster holds the ranks
 * ({@code ClusterRanks}) and the page pools ({@code ClusterPages}); each room's own work is a {@link StagedRoom}'s.
 *
 * <pre>{@code
 * KVCluster cluster = KVCluster.builder().shape(ModelShape.llama3_8b()).prefill(2, 1, 1).decode(2, 1)
 *         .transport(transport).bootstrapClient(client).bootstrapAddress(bootstrap).start().block();
 * RoomResult r = cluster.run(room, 4096, 3, new Random(1)).block();
 * }</pre>
 */
public final class KVCluster {

	private final KVClusterBuilder config;
	private final ClusterRanks ranks;
	private final ClusterPages pages;

	KVCluster(KVClusterBuilder b) {
		this.config = b;
		this.ranks = new ClusterRanks(b);
		this.pages = new ClusterPages(b);
	}

	public static KVClusterBuilder builder() {
		return new KVClusterBuilder();
	}

	/** @return prefill managers by DP group, each group in (cp, tp, pp) order */
	public List<List<PrefillKVManager>> prefillManagers() {
		return ranks.prefill();
	}

	public List<DecodeKVManager> decodeManagers() {
		return ranks.decode();
	}

	/** @return prefill memory by DP group, in the order of {@link #prefillManagers()} */
	public List<List<RankMemory>> prefillMemory() {
		return ranks.prefillMemory();
	}

	/** @return the bootstrap server's address */
	public HostPort bootstrapAddress() {
		// The builder's start refused a builder without one.
		return Objects.requireNonNull(config.bootstrap, "bootstrapAddress");
	}

	public List<RankMemory> decodeMemory() {
		return ranks.decodeMemory();
	}

	/** @return the prefill DP group that serves {@code room} (room mod DP size, as decode routes it) */
	public int dpGroup(long room) {
		return (int) Math.floorMod(room, (long) config.prefillDp);
	}

	/** @return pages free on decode (all pages come back after successful rooms) */
	public int freeDecodePages() {
		return pages.freeDecodePages();
	}

	Mono<KVCluster> startAll() {
		return ranks.start().then(Mono.just(this));
	}

	/**
	 * Runs one room end to end. Never errors: a failure is in the result.
	 *
	 * @param room the room (unique per cluster)
	 * @param tokens prompt tokens (pages = ceil(tokens / page size))
	 * @param chunks how many {@code send} calls the prefill ranks make
	 * @param random page scattering and chunk cuts
	 * @return the result after every rank finished and decode memory was checked
	 */
	public Mono<RoomResult> run(long room, int tokens, int chunks, Random random) {
		return run(room, tokens, chunks, random, RoomPriority.NORMAL);
	}

	/**
	 * Runs one room end to end with the given priority on the prefill ranks' connections. Never errors.
	 *
	 * @param room the room (unique per cluster)
	 * @param tokens prompt tokens (pages = ceil(tokens / page size))
	 * @param chunks how many {@code send} calls the prefill ranks make
	 * @param random page scattering and chunk cuts
	 * @param priority how the room's bytes queue behind other rooms' ({@link KVSender#priority})
	 * @return the result after every rank finished and decode memory was checked
	 */
	public Mono<RoomResult> run(long room, int tokens, int chunks, Random random, RoomPriority priority) {
		return Mono.defer(() -> {
			StagedRoom staged = stage(room, tokens, chunks, random).priority(priority);
			// Verification is not the room's: it runs after the latency was stamped, off the completing thread.
			return staged.transfer().then(Mono.fromCallable(staged::verify).subscribeOn(Schedulers.parallel()));
		});
	}

	/**
	 * Prepares one room without moving it: allocates its pages on both sides and writes its pattern into every prefill
	 * rank's pages, aux row and state slots, so that a benchmark can start its clock after this work and stop it before
	 * {@link StagedRoom#verify()}. {@link #run} is {@code stage}, {@link StagedRoom#transfer()}, then
	 * {@link StagedRoom#verify()}.
	 *
	 * @param room the room (unique per cluster)
	 * @param tokens prompt tokens (pages = ceil(tokens / page size))
	 * @param chunks how many {@code send} calls the prefill ranks make
	 * @param random page scattering and chunk cuts (also used by the transfer)
	 * @return the staged room; when the cluster is out of pages it transfers nothing and verifies as that failure
	 */
	public StagedRoom stage(long room, int tokens, int chunks, Random random) {
		return new StagedRoom(config, ranks, pages, dpGroup(room), room, tokens, chunks, random);
	}

	/** Every distinct reason of a (possibly composite) failure. */
	static String describe(Throwable e) {
		return reactor.core.Exceptions.unwrapMultiple(e).stream()
				.map(t -> t.getMessage() == null ? t.toString() : t.getMessage())
				.distinct()
				.collect(java.util.stream.Collectors.joining("; "));
	}

	/**
	 * Adds each side's completion to {@code done}, so that when one side gives up the other side's ranks abort too, as
	 * a router would, instead of waiting for their timeouts (a prefill rank whose decode never asked would otherwise
	 * wait 300 s).
	 */
	static void abortTogether(List<KVReceiver> receivers, List<KVSender> senders, List<Mono<Void>> done) {
		abortTogether(receivers, senders, done, () -> {
		});
	}

	/**
	 * As {@link #abortTogether(List, List, List)}, and tells when decode is done.
	 *
	 * @param decodeLanded run once every receiver completed: decode holds every byte, prefill learns it a trip later
	 */
	static void abortTogether(List<KVReceiver> receivers, List<KVSender> senders, List<Mono<Void>> done,
			Runnable decodeLanded) {
		AtomicInteger receiving = new AtomicInteger(receivers.size());
		for (KVReceiver receiver : receivers) {
			done.add(receiver.completion().doOnSuccess(v -> {
				if (receiving.decrementAndGet() == 0) {
					decodeLanded.run();
				}
			}).doOnError(e -> senders.forEach(x -> x.abort("decode failed: " + describe(e)))));
		}
		for (KVSender sender : senders) {
			done.add(sender.completion().doOnError(e -> receivers.forEach(x -> x.abort("prefill failed: "
					+ describe(e)))));
		}
	}

	/** Closes every manager (not the transport nor the bootstrap client); completes when they are released. */
	public Mono<Void> close() {
		return ranks.close();
	}
}
