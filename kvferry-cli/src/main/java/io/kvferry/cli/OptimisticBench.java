package io.kvferry.cli;

import java.io.PrintWriter;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.stream.IntStream;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvferry.DecodeKVManager;
import io.kvferry.HostPort;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.ParallelLayout;
import io.kvferry.PrefillKVManager;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.transport.netty.NettyKVTransport;
import reactor.core.publisher.Mono;

/**
 * {@code kvferry bench --optimistic}: what optimistic prefill saves on a room whose decode bootstraps late. One 1↔1
 * pair over loopback moves the same room again and again; decode asks for it {@link #LATE} after prefill got it, and
 * the engine's compute of the room takes {@link #COMPUTE}. Waiting, the engine starts computing once decode's request
 * arrived (the room left Bootstrapping), as SGLang without optimistic prefill does; optimistic, it computes at once
 * and sends, the chunk waiting in the sender until the request comes. Rounds alternate the two; each room's time runs
 * from prefill getting the request to decode's Success, and every room's bytes are checked.
 */
final class OptimisticBench {

	static final Duration LATE = Duration.ofMillis(50);
	static final Duration COMPUTE = Duration.ofMillis(50);
	private static final ObjectMapper JSON = new ObjectMapper();
	private static final Duration TIMEOUT = Duration.ofSeconds(30);
	private static final int PAGES = 16;
	private static final int[] NONE = new int[0];

	private OptimisticBench() {
	}

	/** @return the exit status: 0 when every room succeeded with its bytes intact */
	static int run(ModelShape shape, int rounds, boolean json, PrintWriter out, PrintWriter err) {
		DisposableBootstrapServer server = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		NettyKVTransport prefillTransport = NettyKVTransport.create();
		NettyKVTransport decodeTransport = NettyKVTransport.create();
		ReactorBootstrapClient client = ReactorBootstrapClient.create();
		RankMemory prefillMemory = RankMemory.prefill(shape, ParallelLayout.SINGLE, PAGES, 1, 1);
		RankMemory decodeMemory = RankMemory.decode(shape, ParallelLayout.SINGLE, PAGES, 1, 1);
		PrefillKVManager prefill = null;
		DecodeKVManager decode = null;
		try {
			prefill = KVManagerSpec.prefill().kvArgs(prefillMemory.kvArgs()).transport(prefillTransport)
					.bootstrapClient(client).bootstrapAddress(server.address())
					.bindAddress(new HostPort("127.0.0.1", 0)).startNow(TIMEOUT);
			decode = KVManagerSpec.decode().kvArgs(decodeMemory.kvArgs()).transport(decodeTransport)
					.bootstrapClient(client).startNow(TIMEOUT);
			int[] pages = IntStream.range(0, PAGES).toArray();
			double[] waiting = new double[rounds];
			double[] optimistic = new double[rounds];
			int failures = 0;
			long room = 1;
			// Round 0 warms both up; then the order alternates, so neither always goes first.
			for (int i = 0; i <= rounds; i++) {
				for (int k = 0; k < 2; k++) {
					boolean early = (k == 0) == (i % 2 == 0);
					prefillMemory.fill(room, pages, 0, NONE);
					double ms = room(prefill, decode, server.address(), room, pages, early);
					if (ms < 0 || decodeMemory.verify(room, pages, 0, NONE) != null) {
						failures++;
					}
					if (i > 0) {
						(early ? optimistic : waiting)[i - 1] = ms;
					}
					room++;
				}
				if (!json) {
					err.printf(Locale.ROOT, "kvferry bench: optimistic round %d: waiting %.1f ms, optimistic %.1f ms%n",
							i, i == 0 ? 0 : waiting[i - 1], i == 0 ? 0 : optimistic[i - 1]);
					err.flush();
				}
			}
			ObjectNode o = JSON.createObjectNode();
			o.put("late_ms", LATE.toMillis());
			o.put("compute_ms", COMPUTE.toMillis());
			o.put("rounds", rounds);
			o.put("waiting_p50_ms", round(median(waiting)));
			o.put("optimistic_p50_ms", round(median(optimistic)));
			o.put("saved_p50_ms", round(median(waiting) - median(optimistic)));
			o.put("failures", failures);
			if (json) {
				out.println(o);
			}
			else {
				out.printf(Locale.ROOT, "kvferry bench --optimistic: %d rounds of a %d-page room, 1<->1 loopback, decode "
						+ "asks %d ms late, the engine computes %d ms, %s%n", rounds, PAGES, LATE.toMillis(),
						COMPUTE.toMillis(), ModelOptions.describe(shape));
				out.printf(Locale.ROOT, "  waiting for decode's request, then computing: p50 %.1f ms%n",
						median(waiting));
				out.printf(Locale.ROOT, "  computing and sending at once (optimistic):  p50 %.1f ms (%.1f ms saved)%n",
						median(optimistic), median(waiting) - median(optimistic));
				out.println("  result: " + (failures == 0 ? "OK, every room succeeded intact" : failures
						+ " rooms FAILED"));
			}
			out.flush();
			return failures == 0 ? 0 : 1;
		}
		finally {
			if (decode != null) {
				decode.disposeNow(TIMEOUT);
			}
			if (prefill != null) {
				prefill.disposeNow(TIMEOUT);
			}
			prefillTransport.disposeNow(TIMEOUT);
			decodeTransport.disposeNow(TIMEOUT);
			client.dispose();
			server.disposeNow();
		}
	}

	/** @return the room's time in milliseconds, or -1 when it failed */
	private static double room(PrefillKVManager prefill, DecodeKVManager decode, HostPort bootstrap, long room,
			int[] pages, boolean early) {
		long start = System.nanoTime();
		KVSender sender = prefill.sender(room);
		sender.init(pages.length, 0);
		Mono<Void> decodeSide = Mono.delay(LATE).flatMap(x -> {
			KVReceiver receiver = decode.receiver(bootstrap, room);
			receiver.sendMetadata(pages, 0, NONE);
			return receiver.completion();
		});
		Mono<?> computeStarts = early ? Mono.just(KVPoll.BOOTSTRAPPING)
				: sender.states().filter(s -> s != KVPoll.BOOTSTRAPPING).next();
		Mono<Void> prefillSide = computeStarts.then(Mono.delay(COMPUTE)).doOnNext(x -> sender.send(pages, NONE))
				.then(sender.completion());
		try {
			Mono.when(decodeSide, prefillSide).block(TIMEOUT);
			return (System.nanoTime() - start) / 1e6;
		}
		catch (RuntimeException e) {
			return -1;
		}
	}

	private static double median(double[] values) {
		double[] sorted = values.clone();
		Arrays.sort(sorted);
		int n = sorted.length;
		return n == 0 ? 0 : n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
	}

	private static double round(double v) {
		return Math.round(v * 10) / 10.0;
	}
}
