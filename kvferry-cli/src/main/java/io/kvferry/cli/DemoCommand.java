package io.kvferry.cli;

import java.io.PrintWriter;
import java.time.Duration;
import java.util.Locale;
import java.util.Random;
import java.util.concurrent.Callable;

import io.kvferry.KVLayout;
import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.kvferry.examples.engine.TinyEngineDemo;
import io.kvferry.harness.KVCluster;
import io.kvferry.harness.ModelShape;
import io.kvferry.spi.KVTransport;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code kvferry demo}: one JVM with an embedded bootstrap server, a prefill instance and a decode instance talking over
 * loopback (shared memory, TCP or UCX); runs a batch of rooms with verifiable page patterns and checks every byte on
 * decode.
 */
@Command(name = "demo", sortOptions = false, mixinStandardHelpOptions = true,
		description = {
				"Runs prefill and decode in one JVM over loopback (shared memory, TCP or UCX: --transport), with an embedded "
						+ "bootstrap server: a batch of "
						+ "requests with mixed prompt lengths, pages filled with verifiable patterns on prefill, every "
						+ "byte checked on decode. Shows progress on stderr and ends with a summary on stdout.",
				"With --layerwise: prefill computes each layer for --layer-compute (default 2ms) and the demo "
						+ "compares the transfer tail after compute with layer-wise and whole-chunk sends "
						+ "(kvferry bench-layerwise, 3 rounds of 2 rooms of 1024 tokens).",
				"" },
		footer = { "", "Exit status: 0 every byte matched; 1 a room failed or a byte differed; 2 bad usage; "
				+ "3 could not run." })
final class DemoCommand implements Callable<Integer> {

	// Whole-batch start-up bound: listening, registering every prefill rank with the bootstrap server.
	private static final Duration START_TIMEOUT = Duration.ofSeconds(60);
	private static final Duration DEFAULT_LAYER_COMPUTE = Duration.ofMillis(2);
	private static final int LAYERWISE_TOKENS = 1024;

	@Spec
	CommandSpec spec;

	@Mixin
	WorkloadOptions workload;

	@Mixin
	ModelOptions model;

	@Mixin
	LayoutOptions.Prefill prefill;

	@Mixin
	LayoutOptions.Decode decode;

	@Mixin
	TimeoutOptions timeouts;

	@Mixin
	TransportOptions transportOptions;

	@Mixin
	StripeOptions stripes;

	@Mixin
	LayerwiseOptions layers;

	@Option(names = "--json", description = "Print the summary as one JSON object on stdout (requests, failures, "
			+ "bytes, gbps, p50_ms, p99_ms, max_ms, verified, ...).")
	boolean json;

	@Option(names = "--engine", paramLabel = "NAME", description = "Run a model instead of byte patterns: '"
			+ TinyEngineDemo.TINY + "' (a small transformer in plain Java) prefills on one instance, decodes on the "
			+ "other from the transferred KV and checks the tokens against the same model run in one process. "
			+ "Takes --prefill-tp and --decode-tp only.")
	String engine;

	@Mixin
	LoggingOptions logging;

	@Override
	public Integer call() throws InterruptedException {
		CommandLine cl = spec.commandLine();
		if (engine != null) {
			return TinyEngineDemo.run(cl, engine, prefill.tp, decode.tp);
		}
		if (layers.layerwise) {
			// The effect is in the tail after compute: shown side by side with whole-chunk sends, on one room at a time.
			Duration compute = layers.layerCompute.isZero() ? DEFAULT_LAYER_COMPUTE : layers.layerCompute;
			return LayerwiseBench.run(cl, model.shape(cl), LAYERWISE_TOKENS, compute, 3, 2, json);
		}
		workload.validate(cl);
		ModelShape shape = model.shape(cl);
		prefill.validate(cl, shape);
		decode.validate(cl, shape);
		timeouts.validate(cl);
		transportOptions.validate(cl, TransportOptions.SHM, UcxTransports.SHARED_MEMORY);
		stripes.validate(cl);
		LayoutOptions.checkPair(cl, prefill, decode, shape);
		if (shape.mambaUnits() > 0) {
			for (int tp : new int[] { prefill.tp, decode.tp }) {
				if (ModelOptions.MAMBA_UNITS % tp != 0) {
					throw new CommandLine.ParameterException(cl, "--mamba-state with TP " + tp + " (expected: TP sizes "
							+ "dividing " + ModelOptions.MAMBA_UNITS + ")");
				}
			}
		}
		Workload batch = workload.workload(shape.pageSize(), workload.seed);
		long decodePageBytes = DirectMemory.instanceBytes(shape, decode.tp, decode.pp, 1, 1);
		int pool = batch.poolPages(workload.concurrency, (workload.poolMib << 20) / decodePageBytes);
		long needed = DirectMemory.instanceBytes(shape, prefill.tp, prefill.pp, prefill.dp, pool) * prefill.cp
				+ DirectMemory.instanceBytes(shape, decode.tp, decode.pp, 1, pool);
		DirectMemory.check(cl, needed, "lower --max-tokens, --concurrency or --pool-mib");

		PrintWriter out = cl.getOut();
		PrintWriter err = cl.getErr();
		// The KV layouts are named only where one side is not token-major, the default.
		boolean nhd = prefill.kvLayout == KVLayout.NHD && decode.kvLayout == KVLayout.NHD;
		String title = String.format(Locale.ROOT, "kvferry demo: %d requests (%d..%d tokens, %s), "
				+ "prefill TP%d PP%d DP%d%s%s -> decode TP%d PP%d%s%s over loopback", batch.requests().size(),
				batch.minTokens(), batch.maxTokens(), Sizes.bytes(batch.totalPages() * decodePageBytes), prefill.tp,
				prefill.pp, prefill.dp, prefill.cp > 1 ? " CP" + prefill.cp + (prefill.allCpRanks ? " (all CP ranks)" : "")
						: "", nhd ? "" : " " + prefill.kvLayout, decode.tp, decode.pp, nhd ? "" : " " + decode.kvLayout,
				workload.decodePrefix > 0 ? " (decode prefix " + workload.decodePrefix + ")" : "");
		if (!json) {
			err.println(title);
			err.println("  model   " + ModelOptions.describe(shape));
			err.println("  pools   " + pool + " pages per rank (" + Sizes.bytes(needed) + " of KV memory in all)");
			err.println("  transport " + transportOptions.kind().banner());
			err.flush();
		}

		DisposableBootstrapServer server = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		// Prefill and decode each with transports (event loops, UCX workers) of their own, as in two processes.
		TransportKind kind = transportOptions.kind();
		KVTransport transport = kind.create(timeouts.heartbeatInterval);
		KVTransport decodeTransport = kind.create(timeouts.heartbeatInterval);
		ReactorBootstrapClient client = ReactorBootstrapClient.create();
		try {
			KVCluster cluster = KVCluster.builder()
					.shape(shape)
					.prefill(prefill.tp, prefill.pp, prefill.dp)
					.prefillCp(prefill.cp, prefill.allCpRanks, false)
					.decodePrefix(workload.decodePrefix)
					.decode(decode.tp, decode.pp)
					.kvLayouts(prefill.kvLayout, decode.kvLayout)
					.capacity(pool, batch.requests().size() + 1)
					.transport(transport)
					.decodeTransport(decodeTransport)
					.bootstrapClient(client)
					.bootstrapAddress(server.address())
					.customize(spec -> stripes.apply(timeouts.apply(spec)))
					.startNow(START_TIMEOUT);
			try {
				Summary summary = run(cluster, batch, pool, decodePageBytes, err, title)
						.transport(kind.describe(decodeTransport));
				out.println(json ? summary.toJson() : summary.table());
				out.flush();
				if (json && !summary.verified()) {
					summary.reasons().forEach(r -> err.println("failed: " + r));
					err.flush();
				}
				return summary.verified() ? 0 : 1;
			}
			finally {
				Closing.await(cluster.close(), Closing.TIMEOUT, "the demo's KV managers");
			}
		}
		finally {
			kind.dispose(transport);
			kind.dispose(decodeTransport);
			client.dispose();
			server.disposeNow();
		}
	}

	private Summary run(KVCluster cluster, Workload batch, int pool, long pageBytes, PrintWriter err, String title) {
		Progress progress = Progress.forConsole(err, !json || System.console() != null, batch.requests().size(),
				batch.totalPages() * pageBytes);
		BatchRunner runner = new BatchRunner(batch.requests(), workload.concurrency, pool, false,
				r -> cluster.run(r.room(), r.tokens(), workload.chunks(r.tokens()),
						new Random(workload.seed ^ r.room())),
				progress::record);
		progress.start();
		BatchRunner.Outcome outcome;
		try {
			outcome = runner.run().block();
		}
		finally {
			progress.stop();
		}
		return Summary.of(title, batch.requests().size(), outcome);
	}
}
