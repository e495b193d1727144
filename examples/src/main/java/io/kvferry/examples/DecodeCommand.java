package io.kvferry.examples;

import java.io.PrintWriter;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.Callable;

import io.kvferry.HostPort;
import io.kvferry.test.ModelShape;
import io.kvferry.transport.netty.NettyKVTransport;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code kvferry decode}: a decode instance in its own process. Asks a running prefill instance (found through its
 * bootstrap server) for a batch of rooms, verifies every byte and exits; never hangs (heartbeats and state timeouts).
 */
@Command(name = "decode", sortOptions = false, mixinStandardHelpOptions = true,
		description = {
				"Runs a decode instance: asks the prefill instance registered with --bootstrap for a batch of rooms, "
						+ "checks every byte against the pattern prefill writes, prints a summary and exits. Start "
						+ "`kvferry bootstrap` and `kvferry prefill` first, with the same model options.",
				"" },
		footer = { "", "Exit status: 0 every byte matched; 1 a room failed or a byte differed (reasons on stderr); "
				+ "2 bad usage; 3 could not run." })
final class DecodeCommand implements Callable<Integer> {

	private static final Duration START_TIMEOUT = Duration.ofSeconds(30);
	private static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(10);

	@Spec
	CommandSpec spec;

	@Option(names = "--bootstrap", required = true, paramLabel = "HOST:PORT",
			description = "The prefill instance's bootstrap server.")
	HostPort bootstrap;

	@Mixin
	WorkloadOptions workload;

	@Mixin
	ModelOptions model;

	@Mixin
	LayoutOptions.Decode decode;

	@Mixin
	TimeoutOptions timeouts;

	@Option(names = "--keep-going", description = "Keep starting rooms after one failed (default: stop, finish the "
			+ "rooms in flight, report).")
	boolean keepGoing;

	@Option(names = "--json", description = "Print the summary as one JSON object on stdout (the demo's fields).")
	boolean json;

	@Mixin
	LoggingOptions logging;

	@Override
	public Integer call() {
		CommandLine cl = spec.commandLine();
		workload.validate(cl);
		ModelShape shape = model.shape(cl);
		decode.validate(cl, shape);
		timeouts.validate(cl);
		// Room ids must be new to a long-running prefill: random per run, lengths still from --seed.
		Workload batch = workload.workload(shape.pageSize(), System.nanoTime() ^ workload.seed);
		long pageBytes = DirectMemory.instanceBytes(shape, decode.tp, decode.pp, 1, 1);
		int pool = batch.poolPages(workload.concurrency, (workload.poolMib << 20) / pageBytes);
		DirectMemory.check(cl, pool * pageBytes, "lower --max-tokens, --concurrency or --pool-mib");

		PrintWriter out = cl.getOut();
		PrintWriter err = cl.getErr();
		String title = String.format(Locale.ROOT, "kvferry decode: %d requests (%d..%d tokens, %s) from %s, decode "
				+ "TP%d PP%d", batch.requests().size(), batch.minTokens(), batch.maxTokens(),
				Sizes.bytes(batch.totalPages() * pageBytes), bootstrap, decode.tp, decode.pp);
		if (!json) {
			err.println(title);
			err.flush();
		}
		NettyKVTransport transport = timeouts.transport();
		ReactorBootstrapClient client = ReactorBootstrapClient.create();
		try {
			DecodeClient decoder = DecodeClient.start(shape, decode.tp, decode.pp, pool, batch.requests().size() + 1,
					transport, client, timeouts::apply).block(START_TIMEOUT);
			try {
				Progress progress = Progress.forConsole(err, !json || System.console() != null,
						batch.requests().size(), batch.totalPages() * pageBytes);
				BatchRunner runner = new BatchRunner(batch.requests(), workload.concurrency, pool, !keepGoing,
						r -> decoder.run(bootstrap, r.room(), r.tokens()), progress::record);
				progress.start();
				BatchRunner.Outcome outcome;
				try {
					outcome = runner.run().block();
				}
				finally {
					progress.stop();
				}
				Summary summary = Summary.of(title, batch.requests().size(), outcome);
				out.println(json ? summary.toJson() : summary.table());
				out.flush();
				if (!summary.verified()) {
					summary.reasons().forEach(r -> err.println("kvferry decode: failed: " + r));
					err.flush();
				}
				return summary.verified() ? 0 : 1;
			}
			finally {
				decoder.close().block(CLOSE_TIMEOUT);
			}
		}
		finally {
			transport.dispose();
			client.dispose();
		}
	}
}
