package io.kvferry.harness;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Random;

import io.kvferry.HostPort;
import io.kvferry.KVArgs;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.PrefillKVManager;
import io.kvferry.RoomPriority;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;

/**
 * One room of a {@link KVCluster} whose pages are allocated and whose source bytes are written: {@link #transfer()} it
 * once, then {@link #verify()} it once. {@link KVCluster#stage} makes it; {@link KVCluster#run} is stage, transfer,
 * verify.
 *
 * <p>It owns what one room needs from the cluster: its layout on both sides (prefix, DCP shares, chunk cuts), its
 * pages and rows, drawn from the cluster's page pools and given back once it verified, the calls on every
 * rank's manager that move it, and the byte-exact check of every decode rank's share.
 */
public final class StagedRoom {
	private final KVClusterBuilder config;
	private final HostPort bootstrap;
	private final ClusterRanks ranks;
	private final ClusterPages pages;
	private final long room;
	private final Random random;
	private RoomPriority priority = RoomPriority.NORMAL;
	private final int pageSize;
	private final int dstPageSize;
	private final int numPages;
	// Pages decode already holds (its prefix cache): it asks only for the rest. Counted in prefill pages, and in
	// decode's when the page sizes differ.
	private final int prefixPages;
	private final int dstPrefixPages;
	private final int dcp;
	// Pages each decode DCP rank asks for: the first ones of dst.
	private final int[] dstCounts;
	private final long prefixTokens;
	private final int g;
	// Whether the room got its pages; one that did not has none (empty arrays below) and its failure says why.
	private final boolean staged;
	private final int[] src;
	private final int[] dst;
	private final int[] srcRow;
	private final int[] dstRow;
	private final int[] srcState;
	private final int[] dstState;
	// Each send call's pages and state slots, cut here so that the transfer only calls the managers.
	private final int[][] parts;
	private final int[][][] partStates;
	private final long[] outside;
	private final List<List<Integer>> landedLayers = new ArrayList<>();
	// Set by the transfer; read by verify, which runs after the transfer's completion (a happens-before edge).
	private @Nullable String failure;
	private long latency;
	private long decodeLatency;
	private boolean transferred;

	/**
	 * Allocates the room's pages and writes its pattern into every prefill rank of its DP group.
	 *
	 * @param g the prefill DP group that serves the room
	 */
	StagedRoom(KVClusterBuilder config, ClusterRanks ranks, ClusterPages pages, int g, long room, int tokens,
			int chunks, Random random) {
		this.config = config;
		// The builder's start refused a builder without one.
		this.bootstrap = Objects.requireNonNull(config.bootstrap, "bootstrapAddress");
		this.ranks = ranks;
		this.pages = pages;
		this.room = room;
		this.random = random;
		this.pageSize = config.prefillShape().pageSize();
		this.dstPageSize = config.decodeShape().pageSize();
		this.dcp = config.decodeDcp;
		this.outside = new long[ranks.decodeMemory().size()];
		this.numPages = (tokens + pageSize - 1) / pageSize;
		int dstPagesAll = (tokens + dstPageSize - 1) / dstPageSize;
		// The prefix is whole pages on both sides, and no more than either side holds; with decode DCP, whole
		// virtual pages of page size × DCP size.
		int lcm = Math.max(pageSize, dstPageSize) * dcp;
		long prefixTokens = (long) Math.floor(numPages * config.decodePrefix) * pageSize;
		prefixTokens = Math.min(prefixTokens, (long) dstPagesAll * dstPageSize) / lcm * lcm;
		this.prefixPages = (int) (prefixTokens / pageSize);
		this.dstPrefixPages = (int) (prefixTokens / dstPageSize);
		this.g = g;
		boolean contiguous = config.scatterRuns == 0 && (config.contiguous || random.nextInt(4) == 0);
		int[] s = pages.prefillPages(g, numPages, random, contiguous);
		// Each DCP rank asks for its share of the tokens after the prefix; rank 0's is the largest.
		this.dstCounts = new int[dcp];
		for (int r = 0; r < dcp; r++) {
			long rest = tokens - prefixTokens;
			long share = rest <= r ? 0 : (rest - r + dcp - 1) / dcp;
			dstCounts[r] = dcp == 1 ? dstPagesAll - dstPrefixPages : (int) ((share + dstPageSize - 1) / dstPageSize);
		}
		this.prefixTokens = prefixTokens;
		int[] d = pages.decodePages(dstCounts[0], random, contiguous);
		int[] sr = pages.prefillRow(g, random);
		int[] dr = pages.decodeRow(random);
		if (s == null || d == null || sr == null || dr == null) {
			pages.release(g, s, d, sr, dr);
			this.failure = "out of pages for " + numPages + " pages";
			this.staged = false;
			this.src = this.dst = this.srcRow = this.dstRow = this.srcState = this.dstState = new int[0];
			this.parts = new int[0][];
			this.partStates = new int[0][][];
			return;
		}
		this.staged = true;
		this.src = s;
		this.dst = d;
		this.srcRow = sr;
		this.dstRow = dr;
		this.srcState = config.shape.stateItemLen() == 0 ? new int[0] : srcRow;
		this.dstState = config.shape.stateItemLen() == 0 ? new int[0] : dstRow;
		int[] cuts = cuts(numPages, chunks, random);
		this.parts = new int[cuts.length - 1][];
		this.partStates = new int[cuts.length - 1][][];
		for (int c = 0; c + 1 < cuts.length; c++) {
			parts[c] = Arrays.copyOfRange(src, cuts[c], cuts[c + 1]);
			partStates[c] = new int[][] { cuts[c + 1] == numPages ? srcState : new int[0] };
		}
		for (RankMemory mem : ranks.prefillMemory().get(g)) {
			mem.fill(room, src, srcRow[0], srcState);
		}
		if (config.checkUntouched) {
			for (int i = 0; i < outside.length; i++) {
				outside[i] = ranks.decodeMemory().get(i).checksumOutside(dstOf(i), dstRow[0], dstState);
			}
		}
	}

	public long room() {
		return room;
	}

	/** @return the room's source pages on its prefill ranks, in token order (empty when it could not be staged) */
	public int[] sourcePages() {
		return src.clone();
	}

	/**
	 * @return the pages decode asks for, in token order after the prefix it holds (empty when the room could not be
	 *         staged)
	 */
	public int[] destinationPages() {
		return dst.clone();
	}

	/** @return the first page of {@link #sourcePages()} that decode asks for (pages before it are its prefix) */
	public int prefixPages() {
		return prefixPages;
	}

	/** @return the pages decode rank {@code i} asks for: its DCP share of the room's pages */
	private int[] dstOf(int i) {
		return dcp == 1 ? dst : Arrays.copyOf(dst, dstCounts[ranks.decodeMemory().get(i).layout().attnCpRank()]);
	}

	/**
	 * @return the lengths of the runs of pages decode asks for whose source and destination pages are both
	 *         adjacent, in order (each run is one data block per layer buffer and rank pair); empty when the room
	 *         could not be staged
	 */
	public int[] pageRuns() {
		List<Integer> runs = new ArrayList<>();
		int length = 0;
		for (int k = 0; k < dst.length; k++) {
			// With different page sizes only decode's side is looked at: its pages, not prefill's, are counted.
			boolean adjacent = k > 0 && (pageSize != dstPageSize
					|| src[prefixPages + k] == src[prefixPages + k - 1] + 1) && dst[k] == dst[k - 1] + 1;
			if (k > 0 && !adjacent) {
				runs.add(length);
				length = 0;
			}
			length++;
		}
		if (length > 0) {
			runs.add(length);
		}
		return runs.stream().mapToInt(Integer::intValue).toArray();
	}

	/**
	 * @param priority how the room's bytes queue behind other rooms' on the prefill ranks' connections
	 * @return this room, to transfer with that priority
	 */
	public StagedRoom priority(RoomPriority priority) {
		this.priority = Objects.requireNonNull(priority, "priority");
		return this;
	}

	/**
	 * Moves the room: receivers and their destinations on every decode rank, sends on every prefill rank of its DP
	 * group. Completes when every rank's completion arrived (a failed room completes too: its failure is what
	 * {@link #verify()} returns), or at once when the room could not be staged; the latency is stamped there.
	 */
	public Mono<Void> transfer() {
		return Mono.defer(() -> {
			if (transferred) {
				throw new IllegalStateException("room " + room + " was already transferred");
			}
			transferred = true;
			if (!staged) {
				return Mono.empty();
			}
			long start = System.nanoTime();
			List<Mono<Void>> done = new ArrayList<>();
			List<KVSender> senders = new ArrayList<>();
			List<KVReceiver> receivers = new ArrayList<>();
			for (int i = 0; i < ranks.decode().size(); i++) {
				KVReceiver receiver = ranks.decode().get(i).receiver(bootstrap, room);
				receiver.sendMetadata(prefixPages * pageSize, dstOf(i), dstRow[0], new int[][] { dstState });
				receivers.add(receiver);
				if (config.layerwise) {
					List<Integer> landed = new java.util.concurrent.CopyOnWriteArrayList<>();
					landedLayers.add(landed);
					done.add(receiver.layers().doOnNext(landed::add).then());
				}
			}
			for (PrefillKVManager p : ranks.prefill().get(g)) {
				KVSender sender = p.sender(room);
				sender.priority(priority);
				sender.init(numPages, srcRow[0]);
				for (int c = 0; c < parts.length; c++) {
					int[] part = parts[c];
					int[][] state = partStates[c];
					if (config.layerwise && random.nextBoolean()) {
						for (int layer : shuffledLayers(p.kvArgs(), random)) {
							sender.sendLayer(layer, part, state);
						}
					}
					else {
						sender.send(part, state);
					}
				}
				senders.add(sender);
			}
			KVCluster.abortTogether(receivers, senders, done,
					() -> decodeLatency = System.nanoTime() - start);
			// Stamped where the last completion arrives, before any hop to verification, which is not the room's.
			return Mono.whenDelayError(done)
					.doOnTerminate(() -> latency = System.nanoTime() - start)
					.onErrorResume(e -> {
						failure = KVCluster.describe(e);
						return Mono.empty();
					});
		});
	}

	/**
	 * @return nanoseconds from the first send until every decode rank's receiver completed, when decode holds the
	 *         whole room (prefill's completion, which {@link RoomResult#latencyNanos} waits for too, follows a trip
	 *         later); 0 when the room did not succeed on decode. Read it after {@link #transfer()} completed.
	 */
	public long decodeLatencyNanos() {
		return decodeLatency;
	}

	/**
	 * Checks every byte of every decode rank's share of the room (and, when the cluster checks it, that nothing
	 * outside the room's pages changed), then frees the room's pages if it succeeded. Call it once, after
	 * {@link #transfer()} completed.
	 *
	 * @return the room's result: a transfer failure, the first wrong byte, or success with the bytes that landed
	 */
	public RoomResult verify() {
		if (staged && !transferred) {
			throw new IllegalStateException("room " + room + " was not transferred");
		}
		if (failure != null) {
			return new RoomResult(room, numPages, 0, latency, failure);
		}
		long bytes = 0;
		for (int i = 0; i < landedLayers.size(); i++) {
			String wrong = checkLayers(ranks.decodeMemory().get(i).kvArgs(), landedLayers.get(i));
			if (wrong != null) {
				return new RoomResult(room, numPages, bytes, latency, wrong);
			}
		}
		for (int i = 0; i < ranks.decodeMemory().size(); i++) {
			RankMemory mem = ranks.decodeMemory().get(i);
			// Past prefill's last page (decode's pages may be larger), decode's last page repeats that page.
			int[] own = dstOf(i);
			String mismatch = dcp > 1
					? mem.verifyDcp(room, own, prefixTokens, dstRow[0], dstState,
							(long) (numPages - prefixPages) * pageSize)
					: mem.verify(room, dst, dstPrefixPages, dstRow[0], dstState, (long) numPages * pageSize,
							pageSize);
			if (mismatch == null && config.checkUntouched
					&& mem.checksumOutside(own, dstRow[0], dstState) != outside[i]) {
				mismatch = "room " + room + ": decode rank " + i + " changed bytes outside the room's"
						+ " pages, aux row and state slots";
			}
			if (mismatch != null) {
				return new RoomResult(room, numPages, bytes, latency, mismatch);
			}
			bytes += mem.kvBytes(own.length);
		}
		// No zeroing before reuse: patterns depend on the room, so stale pages never verify.
		pages.release(g, src, dst, srcRow, dstRow);
		return new RoomResult(room, numPages, bytes, latency, null);
	}

	/** @return a prefill rank's layers (main, then draft) in a random order */
	private static List<Integer> shuffledLayers(KVArgs args, Random random) {
		List<Integer> layers = new ArrayList<>();
		for (int l = 0; l < args.kvLayerCount() + args.draftLayers(); l++) {
			layers.add(l);
		}
		java.util.Collections.shuffle(layers, random);
		return layers;
	}

	/** @return why a decode rank's landed layers are not each of its main layers once, or null */
	private static @Nullable String checkLayers(KVArgs decode, List<Integer> landed) {
		List<Integer> sorted = new ArrayList<>(landed);
		sorted.sort(null);
		List<Integer> expected = new ArrayList<>();
		// Prefill ranks here hold no draft layers: decode's draft buffers stay unfilled and are not layers of the room.
		for (int l = 0; l < decode.kvLayerCount(); l++) {
			expected.add(l);
		}
		return sorted.equals(expected) ? null : "layers() emitted " + landed + ", expected each of " + expected + " once";
	}

	private static int[] cuts(int numPages, int chunks, Random random) {
		int n = Math.max(1, Math.min(chunks, Math.max(1, numPages)));
		java.util.TreeSet<Integer> points = new java.util.TreeSet<>();
		points.add(0);
		points.add(numPages);
		while (points.size() < n + 1 && numPages > 1) {
			points.add(1 + random.nextInt(numPages - 1));
		}
		return points.stream().mapToInt(Integer::intValue).toArray();
	}
}
