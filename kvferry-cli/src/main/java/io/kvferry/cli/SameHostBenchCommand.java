package io.kvferry.cli;

import java.io.IOException;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.Callable;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code kvferry bench-same-host}: {@link SameHostBench} from the command line. */
@Command(name = "bench-same-host", sortOptions = false, mixinStandardHelpOptions = true,
		description = {
				"Measures the same-host shared-memory path: one large room 1<->1 through a shared ring vs a "
						+ "single-thread memcpy of the same bytes and the same room over TCP loopback, interleaved "
						+ "rounds after a warm-up, medians (min..max on stderr).",
				"Every room's bytes are verified. Figures depend on the machine: compare ratios, not absolutes.",
				"" },
		footer = { "", "Exit status: 0 measured and every byte matched; 1 a room failed; 2 bad usage." })
final class SameHostBenchCommand implements Callable<Integer> {

	@Spec
	CommandSpec spec;

	@Option(names = "--bulk-mib", defaultValue = "256", paramLabel = "MIB",
			description = "Size of the room (default: ${DEFAULT-VALUE}).")
	int bulkMib;

	@Option(names = "--rounds", defaultValue = "9", paramLabel = "N",
			description = "Timed rounds of each (default: ${DEFAULT-VALUE}).")
	int rounds;

	@Option(names = "--warmup", defaultValue = "5s", paramLabel = "DURATION",
			description = "Warm-up of each pair before the timed rounds (default: ${DEFAULT-VALUE}).")
	Duration warmup;

	@Mixin
	ModelOptions model;

	@Option(names = "--json", description = "Print one JSON object: same_host {gbps, memcpy_gbps, ratio, tcp_gbps, "
			+ "shared_memory, bytes, rounds}.")
	boolean json;

	@Mixin
	LoggingOptions logging;

	@Override
	public Integer call() {
		CommandLine cl = spec.commandLine();
		ModelOptions.positive(cl, "--bulk-mib", bulkMib);
		ModelOptions.positive(cl, "--rounds", rounds);
		DirectMemory.check(cl, 6L * bulkMib << 20, "lower --bulk-mib");
		PrintWriter out = cl.getOut();
		PrintWriter err = cl.getErr();
		SameHostBench.Result r;
		try {
			r = SameHostBench.run(model.shape(cl), (long) bulkMib << 20, rounds, warmup, err);
		}
		catch (IOException e) {
			err.println("kvferry bench-same-host: failed: " + e.getMessage());
			err.flush();
			return 1;
		}
		ObjectNode o = new ObjectMapper().createObjectNode();
		ObjectNode s = o.putObject("same_host");
		s.put("gbps", r.gbps());
		s.put("memcpy_gbps", r.memcpyGbps());
		s.put("ratio", Math.round(r.ratio() * 100) / 100.0);
		s.put("tcp_gbps", r.tcpGbps());
		s.put("shared_memory", r.sharedMemory());
		s.put("bytes", r.bytes());
		s.put("rounds", r.rounds());
		if (json) {
			out.println(o);
		}
		else {
			out.println(String.format(Locale.ROOT, "same host (%s rooms, medians of %d rounds): shared memory %.2f "
					+ "GB/s, memcpy %.2f GB/s, ratio %.2f; TCP %.2f GB/s%s", Sizes.bytes(r.bytes()), r.rounds(),
					r.gbps(), r.memcpyGbps(), r.ratio(), r.tcpGbps(), r.sharedMemory() ? ""
							: " (the shared-memory pair fell back to TCP)"));
		}
		err.println("kvferry bench-same-host: spread " + r.spread());
		out.flush();
		err.flush();
		return 0;
	}
}
