package io.kvferry.cli;

import java.io.PrintWriter;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;

import io.kvferry.HostPort;
import io.kvferry.bootstrap.BootstrapFields;
import io.kvferry.bootstrap.BootstrapClient;
import io.kvferry.bootstrap.server.StopSignal;
import io.kvferry.PrefillKVManager;
import io.kvferry.harness.ModelShape;
import io.kvferry.spi.KVTransport;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * {@code kvferry prefill}: a prefill instance in its own process. Registers every rank with the bootstrap server and
 * serves every room decode asks for (pattern-filled pages, chunked sends) until stopped (SIGINT or SIGTERM), then
 * drains: no new room, rooms in flight served for up to {@code --drain-timeout}, the rest aborted with the reason.
 */
@Command(name = "prefill", sortOptions = false, mixinStandardHelpOptions = true,
		description = {
				"Runs a prefill instance until stopped: every rank listens, registers with the bootstrap server, and "
						+ "for each room a decode instance asks for allocates pages, fills them with the room's "
						+ "verifiable pattern and sends them in chunks. Prints one line when ready.",
				"" },
		footer = { "", "On SIGTERM or SIGINT it drains: it admits no new room (decode ranks are told and fail new rooms "
				+ "at once with the reason), serves the rooms in flight for up to --drain-timeout, aborts the rest "
				+ "with the reason, and exits.",
				"", "Exit status: 0 after SIGINT/SIGTERM (drained, or the rest aborted at the deadline); 2 bad usage; 3 "
						+ "could not start (e.g. the bootstrap server is unreachable)." })
final class PrefillCommand implements Callable<Integer> {

	private static final Duration START_TIMEOUT = Duration.ofSeconds(90);
	private static final Duration REPORT_INTERVAL = Duration.ofSeconds(10);

	@Spec
	CommandSpec spec;

	@Option(names = "--bootstrap", required = true, paramLabel = "HOST:PORT",
			description = "The bootstrap server to register with; with --registry, the name of this prefill "
					+ "instance in etcd (decode names it the same).")
	HostPort bootstrap;

	@Option(names = "--host", defaultValue = "0.0.0.0", paramLabel = "HOST",
			description = "Address the ranks listen on (default: ${DEFAULT-VALUE}, on a free port each).")
	String host;

	@Option(names = "--advertise-host", paramLabel = "HOST[,HOST...]", split = ",",
			description = "Address decode should dial, when it differs from --host (containers, NAT); default: "
					+ "--host, or the detected local address for a wildcard --host. Several, one per network "
					+ "interface of this host: decode dials the first (as SGLang's does) and deals each session's "
					+ "stripes over all of them (listen on a wildcard --host then).")
	List<String> advertiseHosts;

	@Mixin
	LayoutOptions.Prefill prefill;

	@Mixin
	ModelOptions model;

	@Option(names = "--pool-tokens", defaultValue = "12288", paramLabel = "N",
			description = "KV pool of each DP group, in tokens; must hold decode's longest request "
					+ "(default: ${DEFAULT-VALUE}).")
	int poolTokens;

	@Option(names = "--chunk-tokens", defaultValue = "4096", paramLabel = "N",
			description = "Send each room in chunks of this many tokens, as chunked prefill does "
					+ "(default: ${DEFAULT-VALUE}).")
	int chunkTokens;

	@Option(names = "--metrics-port", paramLabel = "PORT",
			description = "Serve Prometheus metrics of every rank at http://HOST:PORT/metrics (default: off).")
	Integer metricsPort;

	@Mixin
	LayerwiseOptions layers;

	@Mixin
	TimeoutOptions timeouts;

	@Mixin
	TransportOptions transportOptions;

	@Mixin
	DrainOptions drain;

	@Mixin
	RegistryOptions registry;

	@Mixin
	LoggingOptions logging;

	@Override
	public Integer call() {
		CommandLine cl = spec.commandLine();
		ModelShape shape = model.shape(cl);
		prefill.validate(cl, shape);
		timeouts.validate(cl);
		transportOptions.validate(cl, TransportOptions.TCP, "");
		drain.validate(cl);
		if (advertiseHosts != null && (advertiseHosts.size() > BootstrapFields.MAX_ENDPOINTS
				|| new HashSet<>(advertiseHosts).size() != advertiseHosts.size() || advertiseHosts.contains(""))) {
			throw new CommandLine.ParameterException(cl, "--advertise-host : " + String.join(",", advertiseHosts)
					+ " (expected: 1.." + BootstrapFields.MAX_ENDPOINTS + " distinct addresses, one per interface)");
		}
		ModelOptions.positive(cl, "--pool-tokens", poolTokens);
		ModelOptions.positive(cl, "--chunk-tokens", chunkTokens);
		int poolPages = (poolTokens + shape.pageSize() - 1) / shape.pageSize();
		DirectMemory.check(cl, DirectMemory.instanceBytes(shape, prefill.tp, prefill.pp, prefill.dp, poolPages)
				* prefill.cp,
				"lower --pool-tokens");

		PrintWriter out = cl.getOut();
		// Before start: a signal from then on drains instead of killing the JVM mid-room.
		Mono<String> stop = StopSignal.install();
		BootstrapClient client = registry.client(cl, System::getenv);
		TransportKind kind = transportOptions.kind();
		KVTransport transport = kind.create(timeouts.heartbeatInterval);
		MetricsEndpoint metrics = metricsPort == null ? null : MetricsEndpoint.start(host, metricsPort);
		// Rooms in flight are bounded by pages: one aux row per page is more than enough.
		PrefillEngine.Config config = new PrefillEngine.Config(shape, prefill.tp, prefill.pp, prefill.dp, prefill.cp,
				prefill.allCpRanks, poolPages, poolPages + 1, chunkTokens, host, advertiseHosts, bootstrap, transport,
				client, s -> metrics == null ? timeouts.apply(s) : timeouts.apply(s).metricsRecorder(metrics.recorder()),
				layers.layerCompute, layers.layerwise, prefill.kvLayout);
		PrefillEngine engine;
		try {
			engine = PrefillEngine.start(config).block(START_TIMEOUT);
		}
		catch (RuntimeException e) {
			kind.dispose(transport);
			RegistryOptions.dispose(client);
			if (metrics != null) {
				metrics.dispose();
			}
			throw e;
		}
		String endpoints = engine.managers().stream().map(PrefillKVManager::endpoint).map(HostPort::toString)
				.collect(Collectors.joining(", "));
		out.printf(Locale.ROOT, "kvferry prefill: ready, %d ranks (TP%d PP%d DP%d) registered with %s, listening on "
				+ "%s%n", engine.managers().size(), prefill.tp, prefill.pp, prefill.dp, registry.describe(bootstrap),
				endpoints);
		out.println("  model   " + ModelOptions.describe(shape));
		out.println("  pools   " + poolPages + " pages per rank, KV pages " + prefill.kvLayout);
		if (advertiseHosts != null && advertiseHosts.size() > 1) {
			out.println("  interfaces " + String.join(", ", advertiseHosts) + ": decode deals its stripes over them");
		}
		out.println("  transport " + kind.banner());
		if (metrics != null) {
			metrics.bind(engine.managers());
			out.println("  metrics http://" + new HostPort(host, metrics.port()) + "/metrics");
		}
		out.flush();

		Disposable reports = Flux.interval(REPORT_INTERVAL, Schedulers.parallel())
				.map(t -> report(engine))
				.distinctUntilChanged()
				.subscribe(line -> {
					out.println(line);
					out.flush();
				});
		String signal = stop.block();
		reports.dispose();
		long start = System.nanoTime();
		out.printf(Locale.ROOT, "kvferry prefill: %s: draining, %d rooms in flight, deadline %s%n", signal,
				engine.roomsInFlight(), drain.drainTimeout);
		out.flush();
		try {
			// The deadline bounds the drain; the margin covers withdrawing the registration.
			engine.drain(drain.drainTimeout).block(drain.drainTimeout.plus(Closing.TIMEOUT));
			out.printf(Locale.ROOT, "kvferry prefill: drained in %d ms; %d rooms aborted by the drain%n",
					(System.nanoTime() - start) / 1_000_000, engine.drainFailures());
			out.flush();
		}
		finally {
			if (metrics != null) {
				metrics.dispose();
			}
			try {
				Closing.await(engine.close(), Closing.TIMEOUT, "prefill's KV managers");
			}
			finally {
				kind.dispose(transport);
				RegistryOptions.dispose(client);
				out.println("kvferry prefill: stopped; " + report(engine));
				out.flush();
			}
		}
		return 0;
	}

	private static String report(PrefillEngine engine) {
		return String.format(Locale.ROOT, "served %d rooms (%s), %d failed", engine.served(),
				Sizes.bytes(engine.bytes()), engine.failed());
	}
}
