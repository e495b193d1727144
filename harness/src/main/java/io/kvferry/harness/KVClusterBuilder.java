package io.kvferry.harness;

import java.time.Duration;
import java.util.Objects;
import java.util.function.UnaryOperator;

import io.kvferry.HostPort;
import io.kvferry.KVLayout;
import io.kvferry.KVManagerSpec;
import io.kvferry.bootstrap.BootstrapClient;
import io.kvferry.spi.KVTransport;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;

/** Mutable builder of a {@link KVCluster}. */
public final class KVClusterBuilder {
	// Read by the cluster it starts; a builder is not shared between threads while it is set up.
	ModelShape shape = ModelShape.llama3_8b();
	int prefillTp = 1;
	int prefillPp = 1;
	int prefillDp = 1;
	int prefillCp = 1;
	boolean allCpRanks;
	boolean dsaLayerSplit;
	double decodePrefix;
	boolean checkUntouched;
	int decodeTp = 1;
	int decodePp = 1;
	int decodeDcp = 1;
	int pages = 256;
	// Tokens per page on each side; 0: the shape's.
	int prefillPageSize;
	int decodePageSize;
	KVLayout prefillKvLayout = KVLayout.NHD;
	KVLayout decodeKvLayout = KVLayout.NHD;
	int rows = 64;
	boolean contiguous;
	int scatterRuns;
	boolean layerwise;
	String host = "127.0.0.1";
	@Nullable KVTransport transport;
	@Nullable KVTransport decodeTransport;
	@Nullable BootstrapClient client;
	@Nullable HostPort bootstrap;
	UnaryOperator<KVManagerSpec<?, ?>> customizer = UnaryOperator.identity();

	KVClusterBuilder() {
	}

	public KVClusterBuilder shape(ModelShape shape) {
		this.shape = Objects.requireNonNull(shape, "shape");
		return this;
	}

	/** Prefill attention TP, PP and DP sizes. */
	public KVClusterBuilder prefill(int tp, int pp, int dp) {
		this.prefillTp = tp;
		this.prefillPp = pp;
		this.prefillDp = dp;
		return this;
	}

	/**
	 * Prefill attention CP size, and how CP ranks share the transfer.
	 *
	 * @param cp CP size
	 * @param allCpRanks every CP rank sends its share of the pages (else CP rank 0 sends all)
	 * @param dsaLayerSplit KV layers split across CP ranks
	 */
	public KVClusterBuilder prefillCp(int cp, boolean allCpRanks, boolean dsaLayerSplit) {
		this.prefillCp = cp;
		this.allCpRanks = allCpRanks;
		this.dsaLayerSplit = dsaLayerSplit;
		return this;
	}

	/**
	 * The share of each room's pages decode already holds (rounded down to whole pages; 1 is a full hit): decode
	 * names that prefix and asks only for the rest.
	 */
	public KVClusterBuilder decodePrefix(double fraction) {
		if (fraction < 0 || fraction > 1) {
			throw new IllegalArgumentException("decodePrefix : " + fraction + " (expected: 0..1)");
		}
		this.decodePrefix = fraction;
		return this;
	}

	/** Also checks that no decode byte outside each room's pages, aux row and state slots changed. */
	public KVClusterBuilder checkUntouched(boolean check) {
		this.checkUntouched = check;
		return this;
	}

	/** Decode attention TP and PP sizes. */
	public KVClusterBuilder decode(int tp, int pp) {
		this.decodeTp = tp;
		this.decodePp = pp;
		return this;
	}

	/**
	 * Decode context parallelism: decode TP rank t is DCP rank {@code t mod dcp}, and each holds only its share of a
	 * room's tokens (MLA only). The decode TP size must be a multiple of {@code dcp}.
	 */
	public KVClusterBuilder decodeDcp(int dcp) {
		if (dcp < 1) {
			throw new IllegalArgumentException("decodeDcp : " + dcp + " (expected: >= 1)");
		}
		this.decodeDcp = dcp;
		return this;
	}

	/**
	 * Tokens per page on each side, when they differ from the shape's: decode re-pages what it receives. Each side's
	 * {@link #capacity} is scaled to hold as many tokens as {@code pages} pages of the shape's size.
	 */
	public KVClusterBuilder pageSizes(int prefill, int decode) {
		if (prefill < 1 || decode < 1) {
			throw new IllegalArgumentException("pageSizes : " + prefill + "/" + decode + " (expected: >= 1)");
		}
		this.prefillPageSize = prefill;
		this.decodePageSize = decode;
		return this;
	}

	/** How each side orders its KV pages (NHD on both by default): prefill re-lays what it sends to decode's. */
	public KVClusterBuilder kvLayouts(KVLayout prefill, KVLayout decode) {
		this.prefillKvLayout = Objects.requireNonNull(prefill, "prefill");
		this.decodeKvLayout = Objects.requireNonNull(decode, "decode");
		return this;
	}

	ModelShape prefillShape() {
		return prefillPageSize == 0 ? shape : shape.withPageSize(prefillPageSize);
	}

	ModelShape decodeShape() {
		return decodePageSize == 0 ? shape : shape.withPageSize(decodePageSize);
	}

	/** @return pages per layer buffer of a side with that shape: as many tokens as the shape's capacity */
	int pagesOf(ModelShape side) {
		return (int) Math.max(1, (long) pages * shape.pageSize() / side.pageSize());
	}

	/** Pages per layer buffer on every rank, and aux rows / state slots. */
	public KVClusterBuilder capacity(int pages, int rows) {
		this.pages = pages;
		this.rows = rows;
		return this;
	}

	/**
	 * Sends about half the chunks layer by layer, in a shuffled layer order, and checks that every decode rank's
	 * {@code layers()} emitted each of its layers once.
	 */
	public KVClusterBuilder layerwise(boolean layerwise) {
		this.layerwise = layerwise;
		return this;
	}

	/** Always allocate contiguous page runs (else one room in four is contiguous). */
	public KVClusterBuilder contiguous(boolean contiguous) {
		this.contiguous = contiguous;
		return this;
	}

	/**
	 * Scatters every room's pages on both sides as a busy pool does: runs of 1 to {@code maxRun} adjacent pages at
	 * random places, never one contiguous run (0, the default: random pages, one room in four contiguous).
	 */
	public KVClusterBuilder scatterRuns(int maxRun) {
		if (maxRun < 0) {
			throw new IllegalArgumentException("scatterRuns : " + maxRun + " (expected: >= 0)");
		}
		this.scatterRuns = maxRun;
		return this;
	}

	/** Host prefill ranks listen on (default 127.0.0.1). */
	public KVClusterBuilder host(String host) {
		this.host = Objects.requireNonNull(host, "host");
		return this;
	}

	/** Transport of every rank (of the prefill ranks only when {@link #decodeTransport} is set). */
	public KVClusterBuilder transport(KVTransport transport) {
		this.transport = Objects.requireNonNull(transport, "transport");
		return this;
	}

	/**
	 * Transport of the decode ranks, when it should not be the prefill ranks' one: with its own event loops, as a
	 * decode instance in another process has.
	 */
	public KVClusterBuilder decodeTransport(KVTransport transport) {
		this.decodeTransport = Objects.requireNonNull(transport, "transport");
		return this;
	}

	public KVClusterBuilder bootstrapClient(BootstrapClient client) {
		this.client = Objects.requireNonNull(client, "client");
		return this;
	}

	public KVClusterBuilder bootstrapAddress(HostPort bootstrap) {
		this.bootstrap = Objects.requireNonNull(bootstrap, "bootstrap");
		return this;
	}

	/** Adjusts every manager's spec (timeouts, timer). */
	public KVClusterBuilder customize(UnaryOperator<KVManagerSpec<?, ?>> customizer) {
		this.customizer = Objects.requireNonNull(customizer, "customizer");
		return this;
	}

	/** @return the started cluster (every prefill rank registered) */
	public Mono<KVCluster> start() {
		Objects.requireNonNull(transport, "transport");
		Objects.requireNonNull(client, "bootstrapClient");
		Objects.requireNonNull(bootstrap, "bootstrapAddress");
		return Mono.defer(() -> new KVCluster(this).startAll());
	}

	/** Blocking {@link #start()} bounded by {@code timeout}. */
	public KVCluster startNow(Duration timeout) {
		// A start emits its cluster or fails: it never completes empty.
		return Objects.requireNonNull(start().block(timeout), "started cluster");
	}
}
