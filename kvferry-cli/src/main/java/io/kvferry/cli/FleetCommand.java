package io.kvferry.cli;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine;
import reactor.core.Disposable;

/**
 * {@code kvferry fleet}: a fleet simulated in one JVM ({@link FleetBench}), grown size by size, to show that nothing
 * grows faster than the work: connections, threads, memory, registry requests and rooms per second.
 */
@Command(name = "fleet", sortOptions = false, mixinStandardHelpOptions = true,
		description = {
				"Simulates a fleet in this JVM: N prefill and N decode instances of --tp ranks each on the in-memory "
						+ "transport, every prefill instance registered with an HTTP bootstrap server of its own "
						+ "(loopback, a free port each) or, with --registry, under its own name in etcd. For each N of "
						+ "--sizes: one room per pair of instances (first contact), then --rooms rooms spread at random "
						+ "across all pairs, --concurrency at a time, every byte checked.",
				"Reports per size: connections, threads (and the bootstrap servers' among them, one per prefill "
						+ "instance), heap after a GC, direct memory, registry calls (registrations; look-ups at first "
						+ "contact and per timed room) and rooms/s.",
				"" },
		footer = { "", "Exit status: 0 every room verified; 1 a room failed; 2 bad usage; 3 could not run." })
final class FleetCommand implements Callable<Integer> {

	@Spec
	CommandSpec spec;

	@Option(names = "--sizes", split = ",", defaultValue = "4,8,16,32", paramLabel = "N[,N...]",
			description = "Instances a side, one fleet per size (default: ${DEFAULT-VALUE}).")
	List<Integer> sizes;

	@Option(names = "--tp", defaultValue = "8", paramLabel = "N",
			description = "Attention TP size of every instance (default: ${DEFAULT-VALUE}).")
	int tp;

	@Option(names = "--rooms", defaultValue = "2000", paramLabel = "N",
			description = "Timed rooms per size, after one room per pair (default: ${DEFAULT-VALUE}).")
	int rooms;

	@Option(names = "--concurrency", defaultValue = "32", paramLabel = "N",
			description = "Rooms in flight across the fleet (default: ${DEFAULT-VALUE}).")
	int concurrency;

	@Option(names = "--tokens", defaultValue = "32", paramLabel = "N",
			description = "Tokens of each room; 16 tokens a page, a 2-layer model of 8 KV heads "
					+ "(default: ${DEFAULT-VALUE}).")
	int tokens;

	@Mixin
	RegistryOptions registry;

	@Option(names = "--json", description = "Print the figures as one JSON object on stdout: {tp, rooms, "
			+ "concurrency, registry, sizes: [{instances, ranks, rooms, failures, rooms_per_s, connections, threads, "
			+ "server_threads, heap_bytes, direct_bytes, rank_memory_bytes, registrations, first_contact_lookups, "
			+ "timed_lookups, lookups_per_room, server_requests, thread_pools {name: count}}], verified}.")
	boolean json;

	@Mixin
	LoggingOptions logging;

	@Override
	public Integer call() {
		CommandLine cl = spec.commandLine();
		ModelOptions.positive(cl, "--tp", tp);
		ModelOptions.positive(cl, "--rooms", rooms);
		ModelOptions.positive(cl, "--concurrency", concurrency);
		ModelOptions.positive(cl, "--tokens", tokens);
		if (FleetBench.SHAPE.kvHeads() % tp != 0) {
			throw new CommandLine.ParameterException(cl, "--tp : " + tp + " (expected: a divisor of "
					+ FleetBench.SHAPE.kvHeads() + ", the model's KV heads)");
		}
		for (int n : sizes) {
			ModelOptions.positive(cl, "--sizes", n);
		}
		// Checked once here, so that a wrong option fails before any fleet starts.
		if (registry.client(cl, System::getenv) instanceof Disposable checked) {
			checked.dispose();
		}
		FleetBench.Settings settings = new FleetBench.Settings(tp, rooms, concurrency, tokens, registry.registry,
				prefix -> registry.etcd(cl, System::getenv).prefix(prefix)
						.timeout(registry.etcdTimeout.compareTo(FleetBench.ETCD_TIMEOUT) > 0 ? registry.etcdTimeout
								: FleetBench.ETCD_TIMEOUT));
		PrintWriter out = cl.getOut();
		PrintWriter err = cl.getErr();
		int baseline = FleetBench.threads()[0];
		FleetBench.warmUp(settings).block();
		List<FleetBench.Row> rows = new ArrayList<>();
		for (int n : sizes) {
			if (!json) {
				err.printf(Locale.ROOT, "kvferry fleet: %d prefill + %d decode instances of TP%d ...%n", n, n, tp);
				err.flush();
			}
			rows.add(FleetBench.run(n, settings));
		}
		boolean verified = rows.stream().allMatch(r -> r.failures() == 0);
		out.println(json ? json(rows, baseline, verified) : table(rows, baseline));
		out.flush();
		rows.stream().filter(r -> r.firstFailure() != null)
				.forEach(r -> err.println("kvferry fleet: " + r.instances() + " a side: " + r.failures()
						+ " rooms failed, first: " + r.firstFailure()));
		err.flush();
		return verified ? 0 : 1;
	}

	private String table(List<FleetBench.Row> rows, int baseline) {
		StringBuilder sb = new StringBuilder();
		sb.append(String.format(Locale.ROOT, "kvferry fleet: TP%d instances, %d timed rooms of %d tokens per size, "
				+ "%d in flight, registry %s; %d threads before the first fleet%n", tp, rooms, tokens, concurrency,
				registry.isEtcd() ? registry.registry : "HTTP bootstrap servers", baseline));
		sb.append(String.format(Locale.ROOT, "%9s %6s %9s %11s %13s %9s %15s %10s %6s %13s %12s %9s%n", "instances",
				"ranks", "rooms/s", "connections", "threads(srv)", "heap MiB", "direct(ranks) MiB", "registers", "first",
				"lookups/room", "server reqs", "failures"));
		for (FleetBench.Row r : rows) {
			sb.append(String.format(Locale.ROOT, "%9s %6d %9.0f %11d %13s %9.1f %17s %10d %6d %13.3f %12s %9d%n",
					r.instances() + "+" + r.instances(), r.ranks(), r.roomsPerSecond(), r.connections(),
					r.threads() + "(" + r.serverThreads() + ")", r.heapBytes() / 1048576.0,
					String.format(Locale.ROOT, "%.1f(%.1f)", r.directBytes() / 1048576.0,
							r.rankMemoryBytes() / 1048576.0), r.registrations(), r.firstContactLookups(), r.lookupsPerTimedRoom(),
					r.serverRequests() < 0 ? "-" : Long.toString(r.serverRequests()), r.failures()));
		}
		sb.append("threads(srv): live threads, of which the HTTP bootstrap servers' (one per prefill instance); "
				+ "first: registry look-ups while every pair ran its first room; direct(ranks): all direct memory (the ranks' "
				+ "KV, aux and state memory)");
		return sb.toString();
	}

	private String json(List<FleetBench.Row> rows, int baseline, boolean verified) {
		ObjectNode o = BenchCommand.JSON.createObjectNode();
		o.put("tp", tp);
		o.put("rooms", rooms);
		o.put("tokens", tokens);
		o.put("concurrency", concurrency);
		o.put("registry", registry.isEtcd() ? "etcd" : "http");
		o.put("baseline_threads", baseline);
		ArrayNode a = o.putArray("sizes");
		for (FleetBench.Row r : rows) {
			ObjectNode j = a.addObject();
			j.put("instances", r.instances());
			j.put("ranks", r.ranks());
			j.put("rooms", r.rooms());
			j.put("failures", r.failures());
			j.put("rooms_per_s", Math.round(r.roomsPerSecond()));
			j.put("connections", r.connections());
			j.put("threads", r.threads());
			j.put("server_threads", r.serverThreads());
			j.put("heap_bytes", r.heapBytes());
			j.put("direct_bytes", r.directBytes());
			j.put("rank_memory_bytes", r.rankMemoryBytes());
			j.put("registrations", r.registrations());
			j.put("first_contact_lookups", r.firstContactLookups());
			j.put("timed_lookups", r.timedLookups());
			j.put("lookups_per_room", r.lookupsPerTimedRoom());
			j.put("server_requests", r.serverRequests());
			ObjectNode pools = j.putObject("thread_pools");
			r.pools().forEach(pools::put);
		}
		o.put("verified", verified);
		return o.toString();
	}
}
