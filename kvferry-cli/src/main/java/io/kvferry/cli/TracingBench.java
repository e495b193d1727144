package io.kvferry.cli;

import java.io.PrintWriter;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvferry.PrefillSpec;
import io.kvferry.DecodeSpec;
import io.kvferry.RoomTracer;
import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.kvferry.harness.KVCluster;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RoomResult;
import io.kvferry.tracing.otel.OpenTelemetryRoomTracer;
import io.kvferry.transport.netty.NettyKVTransport;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.BatchSpanProcessor;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Schedulers;

/**
 * {@code kvferry bench --tracing}: what room tracing costs, measured in one JVM. Two 1↔1 pairs over loopback, one
 * without a tracer and one with {@link OpenTelemetryRoomTracer} on the OpenTelemetry SDK (batch span processor, an
 * exporter that counts and drops), run the same 1-page rooms in alternating rounds, so that both meet the same machine;
 * each reports rooms per second and heap bytes allocated (all threads) per room.
 */
final class TracingBench {

	private static final ObjectMapper JSON = new ObjectMapper();
	private static final Duration START_TIMEOUT = Duration.ofSeconds(60);
	private static final int CONCURRENCY = 16;

	private TracingBench() {
	}

	/** @return the exit status: 0 when every room of every round succeeded */
	static int run(ModelShape shape, int rooms, int rounds, boolean json, PrintWriter out, PrintWriter err) {
		AtomicLong exported = new AtomicLong();
		SdkTracerProvider provider = SdkTracerProvider.builder()
				.addSpanProcessor(BatchSpanProcessor.builder(new CountingExporter(exported)).build()).build();
		RoomTracer tracer = OpenTelemetryRoomTracer.create(OpenTelemetrySdk.builder().setTracerProvider(provider)
				.build());
		NettyKVTransport prefillTransport = NettyKVTransport.create();
		NettyKVTransport decodeTransport = NettyKVTransport.create();
		ReactorBootstrapClient client = ReactorBootstrapClient.create();
		// One bootstrap server per pair: each pair is its own prefill instance.
		DisposableBootstrapServer offServer = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		DisposableBootstrapServer onServer = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		KVCluster off = null;
		KVCluster on = null;
		try {
			off = pair(shape, rooms, prefillTransport, decodeTransport, client, offServer, RoomTracer.NONE);
			on = pair(shape, rooms, prefillTransport, decodeTransport, client, onServer, tracer);
			Round offTotal = new Round();
			Round onTotal = new Round();
			int failures = 0;
			long room = 1;
			// Round 0 warms both up and is not counted; then the order alternates, so neither always goes first.
			for (int i = 0; i <= rounds; i++) {
				boolean offFirst = i % 2 == 0;
				for (int k = 0; k < 2; k++) {
					boolean traced = (k == 0) != offFirst;
					Round r = round(traced ? on : off, shape, room, rooms);
					room += rooms;
					failures += r.failures;
					if (i > 0) {
						(traced ? onTotal : offTotal).add(r);
					}
					if (!json) {
						err.printf(Locale.ROOT, "kvferry bench: tracing %-3s round %d: %,.0f rooms/s, %,d B/room%n",
								traced ? "on" : "off", i, r.roomsPerSecond(), r.bytesPerRoom());
						err.flush();
					}
				}
			}
			provider.forceFlush().join(Closing.TIMEOUT.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
			ObjectNode o = JSON.createObjectNode();
			o.put("rooms_per_round", rooms);
			o.put("rounds", rounds);
			o.put("off_rooms_per_second", Math.round(offTotal.roomsPerSecond()));
			o.put("on_rooms_per_second", Math.round(onTotal.roomsPerSecond()));
			o.put("off_bytes_per_room", offTotal.bytesPerRoom());
			o.put("on_bytes_per_room", onTotal.bytesPerRoom());
			o.put("spans_exported", exported.get());
			o.put("failures", failures);
			if (json) {
				out.println(o);
			}
			else {
				out.printf(Locale.ROOT, "kvferry bench --tracing: %d rounds of %d 1-page rooms each side, 1<->1 "
						+ "loopback, %d concurrent, %s%n", rounds, rooms, CONCURRENCY, ModelOptions.describe(shape));
				out.printf(Locale.ROOT, "  %-12s %14s %16s%n", "tracing", "rooms/s", "heap B/room");
				out.printf(Locale.ROOT, "  %-12s %,14d %,16d%n", "off", o.get("off_rooms_per_second").asLong(),
						offTotal.bytesPerRoom());
				out.printf(Locale.ROOT, "  %-12s %,14d %,16d   (%d spans exported)%n", "on (OTel SDK)",
						o.get("on_rooms_per_second").asLong(), onTotal.bytesPerRoom(), exported.get());
				out.println("  result: " + (failures == 0 ? "OK, every room succeeded" : failures + " rooms FAILED"));
			}
			out.flush();
			return failures == 0 ? 0 : 1;
		}
		finally {
			if (on != null) {
				Closing.await(on.close(), Closing.TIMEOUT, "the traced cluster's KV managers");
			}
			if (off != null) {
				Closing.await(off.close(), Closing.TIMEOUT, "the untraced cluster's KV managers");
			}
			provider.close();
			prefillTransport.dispose();
			decodeTransport.dispose();
			client.dispose();
			offServer.disposeNow();
			onServer.disposeNow();
		}
	}

	private static KVCluster pair(ModelShape shape, int rooms, NettyKVTransport prefillTransport,
			NettyKVTransport decodeTransport, ReactorBootstrapClient client, DisposableBootstrapServer server,
			RoomTracer tracer) {
		return KVCluster.builder().shape(shape).prefill(1, 1, 1).decode(1, 1).capacity(CONCURRENCY * 2, rooms + 1)
				.transport(prefillTransport).decodeTransport(decodeTransport).bootstrapClient(client)
				.bootstrapAddress(server.address())
				.customize(spec -> spec instanceof PrefillSpec p ? p.tracer(tracer) : ((DecodeSpec) spec).tracer(tracer))
				.startNow(START_TIMEOUT);
	}

	private static Round round(KVCluster cluster, ModelShape shape, long firstRoom, int rooms) {
		long before = BenchCommand.allocatedBytes();
		long start = System.nanoTime();
		List<RoomResult> results = Flux.range(0, rooms)
				.flatMap(i -> cluster.run(firstRoom + i, shape.pageSize(), 1, new Random(i))
						.subscribeOn(Schedulers.parallel()), CONCURRENCY)
				.collectList()
				.block();
		Round r = new Round();
		r.nanos = System.nanoTime() - start;
		r.allocated = BenchCommand.allocatedBytes() - before;
		r.rooms = rooms;
		r.failures = (int) results.stream().filter(x -> !x.ok()).count();
		return r;
	}

	/** Figures of one or more rounds of one side. */
	private static final class Round {
		long nanos;
		long allocated;
		long rooms;
		int failures;

		void add(Round r) {
			nanos += r.nanos;
			allocated += r.allocated;
			rooms += r.rooms;
		}

		double roomsPerSecond() {
			return nanos == 0 ? 0 : rooms / (nanos / 1e9);
		}

		long bytesPerRoom() {
			return rooms == 0 ? 0 : allocated / rooms;
		}
	}

	/** Counts the spans and drops them: the cost measured is tracing's, not an exporter's. */
	private static final class CountingExporter implements SpanExporter {
		private final AtomicLong exported;

		CountingExporter(AtomicLong exported) {
			this.exported = exported;
		}

		@Override
		public CompletableResultCode export(Collection<SpanData> spans) {
			exported.addAndGet(spans.size());
			return CompletableResultCode.ofSuccess();
		}

		@Override
		public CompletableResultCode flush() {
			return CompletableResultCode.ofSuccess();
		}

		@Override
		public CompletableResultCode shutdown() {
			return CompletableResultCode.ofSuccess();
		}
	}
}
