package io.kvferry.cli;

import java.io.PrintWriter;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicReference;

import io.kvferry.HostPort;
import io.kvferry.bootstrap.BootstrapClient;
import io.kvferry.bootstrap.server.StopSignal;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RoomResult;
import io.kvferry.spi.KVTransport;
import io.kvferry.transport.synthetic.SyntheticPrefill;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;

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
		footer = { "", "On SIGTERM or SIGINT it starts no new room, lets the rooms in flight finish for up to "
				+ "--drain-timeout (aborting the rest with the reason), prints the summary and exits.",
				"", "Exit status: 0 every byte matched (after a signal: of every room that ran); 1 a room failed or a "
						+ "byte differed (reasons on stderr); 2 bad usage; 3 could not run (no room reached the prefill "
						+ "instance: its bootstrap server or registry unreachable, the instance unknown or incompatible)." })
final class DecodeCommand implements Callable<Integer> {

	private static final Duration START_TIMEOUT = Duration.ofSeconds(30);

	@Spec
	CommandSpec spec;

	@Option(names = "--bootstrap", paramLabel = "HOST:PORT",
			description = "The prefill instance's bootstrap server; with --registry, the name the prefill "
					+ "instance registered under in etcd. Required unless --synthetic.")
	HostPort bootstrap;

	@Mixin
	SyntheticOptions synthetic;

	@Mixin
	WorkloadOptions workload;

	@Mixin
	ModelOptions model;

	@Mixin
	LayoutOptions.Decode decode;

	@Mixin
	TimeoutOptions timeouts;

	@Mixin
	TransportOptions transportOptions;

	@Mixin
	StripeOptions stripes;

	@Mixin
	DrainOptions drain;

	@Option(names = "--keep-going", description = "Keep starting rooms after one failed (default: stop, finish the "
			+ "rooms in flight, report).")
	boolean keepGoing;

	@Option(names = "--warmup", defaultValue = "0", paramLabel = "N",
			description = "First run N rooms of --min-tokens tokens one at a time, left out of the summary: they find "
					+ "the prefill instance, open the connections and warm the JVM, so that the figures measure "
					+ "steady transfers (default: ${DEFAULT-VALUE}).")
	int warmup;

	@Option(names = "--idle", defaultValue = "0s", paramLabel = "DURATION",
			description = "After the warm-up, leave the connections idle this long before the batch (they carry only "
					+ "heartbeats), to see that the first rooms after a quiet spell are served as fast as warm ones "
					+ "(default: ${DEFAULT-VALUE}).")
	Duration idle;

	@Option(names = "--reregister", description = "After the warm-up (and --idle), re-register every decode rank's "
			+ "regions into a fresh pool of the same size, as an engine that swaps its pool does (prefill ranks hear "
			+ "the new layout on the connections they have), then run the batch into the new pools; prints how long "
			+ "it took.")
	boolean reregister;

	@Option(names = "--json", description = "Print the summary as one JSON object on stdout (the demo's fields).")
	boolean json;

	@Mixin
	RegistryOptions registry;

	@Mixin
	LoggingOptions logging;

	@Override
	public Integer call() {
		CommandLine cl = spec.commandLine();
		synthetic.validate(cl);
		if ((bootstrap == null) == !synthetic.enabled || synthetic.enabled && registry.isEtcd()) {
			throw new CommandLine.ParameterException(cl, synthetic.enabled ? "--synthetic : with --bootstrap or "
					+ "--registry (expected: no prefill instance to find)" : "Missing required option: "
					+ "'--bootstrap=HOST:PORT' (or --synthetic)");
		}
		if (synthetic.enabled) {
			// Where the synthetic instance's bootstrap client answers: no server listens there.
			bootstrap = SyntheticPrefill.BOOTSTRAP;
		}
		workload.validate(cl);
		ModelShape shape = model.shape(cl);
		decode.validate(cl, shape);
		timeouts.validate(cl);
		transportOptions.validate(cl, TransportOptions.TCP, "");
		stripes.validate(cl);
		drain.validate(cl);
		if (warmup < 0) {
			throw new CommandLine.ParameterException(cl, "--warmup : " + warmup + " (expected: >= 0)");
		}
		if (idle.isNegative()) {
			throw new CommandLine.ParameterException(cl, "--idle : " + idle + " (expected: >= 0)");
		}
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
			err.println("  transport " + transportOptions.kind().banner());
			err.flush();
		}
		Mono<String> stop = StopSignal.install();
		AtomicReference<String> stoppedBy = new AtomicReference<>();
		SyntheticPrefill source = synthetic.enabled ? synthetic.source(shape, decode.tp, decode.pp) : null;
		BootstrapClient client = source != null ? source.bootstrapClient() : registry.client(cl, System::getenv);
		TransportKind kind = transportOptions.kind();
		KVTransport transport = source != null ? null : kind.create(timeouts.heartbeatInterval);
		try {
			// One aux row (and state slot) per room in flight: rooms free theirs before the runner starts another.
			DecodeClient decoder = DecodeClient.start(shape, decode.tp, decode.pp, decode.kvLayout, pool,
					workload.concurrency, source != null ? source.transport() : transport, client,
					spec -> stripes.apply(timeouts.apply(spec))).block(START_TIMEOUT).decodePrefix(workload.decodePrefix);
			if (source != null) {
				synthetic.checkedBy(decoder.memory());
			}
			try {
				String warmupFailure = warmUp(decoder, shape.pageSize());
				if (warmupFailure != null) {
					err.println("kvferry decode: failed: warm-up room: " + warmupFailure);
					err.flush();
					return decoder.reachedPrefill() ? 1 : couldNotRun(err);
				}
				if (!idle.isZero()) {
					// The lines let a test act on the connections while they are idle.
					err.println("kvferry decode: idle for " + idle.toMillis() + " ms");
					err.flush();
					Mono.delay(idle).block();
					err.println("kvferry decode: idle over");
					err.flush();
				}
				if (reregister) {
					Duration took = decoder.reregister(drain.drainTimeout).block(START_TIMEOUT);
					err.println(String.format(Locale.ROOT, "kvferry decode: re-registered the regions of %d ranks in "
							+ "%.2f ms", decoder.managers().size(), took.toNanos() / 1e6));
					err.flush();
				}
				Progress progress = Progress.forConsole(err, !json || System.console() != null,
						batch.requests().size(), batch.totalPages() * pageBytes);
				// The client frees a failed room's pages before its result: with --keep-going, rooms failed while
				// prefill was away (a restart) must not shrink the batch to one room at a time for good.
				BatchRunner runner = new BatchRunner(batch.requests(), workload.concurrency, pool, !keepGoing, true,
						r -> decoder.run(bootstrap, r.room(), r.tokens()), progress::record);
				progress.start();
				Disposable draining = stop.subscribe(signal -> {
					stoppedBy.set(signal);
					err.println("kvferry decode: " + signal + ": starting no new room, draining the rooms in flight "
							+ "(deadline " + drain.drainTimeout + ")");
					err.flush();
					runner.stop();
					// A room the runner launched just before may still be creating its receivers: a drain begun
					// before they exist would refuse it as a failure, though it never started.
					decoder.closeAdmission()
							.then(Mono.when(decoder.managers().stream().map(m -> m.drain(drain.drainTimeout)).toList()))
							.subscribe();
				});
				BatchRunner.Outcome outcome;
				try {
					outcome = runner.run().block();
				}
				finally {
					draining.dispose();
					progress.stop();
				}
				Summary summary = Summary.of(title, batch.requests().size(), outcome)
						.transport(source != null ? synthetic.describe() : kind.describe(transport));
				if (stoppedBy.get() != null) {
					// Rooms a signal kept from starting are skipped, no failure: every room that ran must have matched.
					summary.stoppedBy(stoppedBy.get());
				}
				out.println(json ? summary.toJson() : summary.table());
				out.flush();
				if (!summary.verified()) {
					summary.reasons().forEach(r -> err.println("kvferry decode: failed: " + r));
					err.flush();
				}
				if (summary.failures() > 0 && !decoder.reachedPrefill()) {
					return couldNotRun(err);
				}
				return summary.verified() ? 0 : 1;
			}
			finally {
				Closing.await(decoder.close(), Closing.TIMEOUT, "decode's KV managers");
			}
		}
		finally {
			if (source != null) {
				source.dispose();
			}
			else {
				kind.dispose(transport);
				RegistryOptions.dispose(client);
			}
		}
	}

	/**
	 * No room got as far as its prefill ranks (the bootstrap server or registry unreachable, the instance unknown or
	 * not one decode can pair with): decode could not run, which is not a room that ran and failed.
	 *
	 * @return the exit status of a command that could not run
	 */
	private int couldNotRun(PrintWriter err) {
		err.println("kvferry decode: could not run: no room reached the prefill instance " + bootstrap
				+ (registry.isEtcd() ? " (registered in etcd)" : "") + "; the reasons are above");
		err.flush();
		return KVFerryCli.EXIT_ERROR;
	}

	/** @return null when every warm-up room was verified, else the first failure */
	private String warmUp(DecodeClient decoder, int pageSize) {
		if (warmup == 0) {
			return null;
		}
		// Own room ids (another seed): the batch's ids stay new to prefill.
		Workload rooms = Workload.generate(warmup, workload.minTokens, workload.minTokens, pageSize, workload.seed,
				~System.nanoTime());
		for (Workload.Request r : rooms.requests()) {
			RoomResult result = decoder.run(bootstrap, r.room(), r.tokens()).block();
			if (!result.ok()) {
				return result.failure();
			}
		}
		return null;
	}
}
