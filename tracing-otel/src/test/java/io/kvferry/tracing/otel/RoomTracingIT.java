package io.kvferry.tracing.otel;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.function.Predicate;

import io.kvferry.DecodeKVManager;
import io.kvferry.HostPort;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.KVTransferException;
import io.kvferry.ParallelLayout;
import io.kvferry.PrefillKVManager;
import io.kvferry.RoomPhases;
import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.transport.netty.NettyKVTransport;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.EventData;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

/**
 * One trace per room across a decode and a prefill manager, each with its own Netty transport on loopback (port 0) and
 * the real bootstrap server: prefill's room span is a child of decode's, which is a child of the caller's span.
 */
class RoomTracingIT {

	private static final Duration T = Duration.ofSeconds(30);
	private static final ModelShape SHAPE = new ModelShape(2, 2, 16, 2, 4, false, 0, 64, 0);
	private static final int[] NONE = new int[0];

	private final InMemorySpanExporter exporter = InMemorySpanExporter.create();
	private final SdkTracerProvider provider = SdkTracerProvider.builder()
			.addSpanProcessor(SimpleSpanProcessor.create(exporter)).build();
	private final OpenTelemetry otel = OpenTelemetrySdk.builder().setTracerProvider(provider).build();
	private final DisposableBootstrapServer server = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
	private final ReactorBootstrapClient client = ReactorBootstrapClient.create();
	private final NettyKVTransport prefillTransport = NettyKVTransport.create();
	private final NettyKVTransport decodeTransport = NettyKVTransport.create();
	private final RankMemory prefillMemory = RankMemory.prefill(SHAPE, ParallelLayout.SINGLE, 8, 2, 2);
	private final RankMemory decodeMemory = RankMemory.decode(SHAPE, ParallelLayout.SINGLE, 8, 2, 2);
	private PrefillKVManager prefill;
	private DecodeKVManager decode;

	@AfterEach
	void close() {
		if (decode != null) {
			decode.disposeNow(T);
		}
		if (prefill != null) {
			prefill.disposeNow(T);
		}
		decodeTransport.disposeNow(T);
		prefillTransport.disposeNow(T);
		client.dispose();
		server.disposeNow();
		provider.close();
	}

	@Test
	void prefillsRoomSpanIsAChildOfDecodesAcrossTheSocketAndEachSideRecordsItsSteps() {
		OpenTelemetryRoomTracer tracer = OpenTelemetryRoomTracer.create(otel);
		HostPort bootstrap = server.address();
		prefill = KVManagerSpec.prefill().tracer(tracer).kvArgs(prefillMemory.kvArgs()).transport(prefillTransport)
				.bootstrapClient(client).bootstrapAddress(bootstrap).bindAddress(new HostPort("127.0.0.1", 0))
				.startNow(T);
		decode = KVManagerSpec.decode().tracer(tracer).kvArgs(decodeMemory.kvArgs()).transport(decodeTransport)
				.bootstrapClient(client).startNow(T);

		// Room 1 succeeds in two chunks, opened under the caller's own span.
		prefillMemory.fill(1, new int[] { 0, 1, 2 }, 0, NONE);
		KVSender sender = prefill.sender(1);
		sender.init(3, 0);
		Span request = otel.getTracer("test").spanBuilder("decode request").startSpan();
		KVReceiver receiver;
		try (Scope scope = request.makeCurrent()) {
			receiver = decode.receiver(bootstrap, 1);
		}
		finally {
			request.end();
		}
		receiver.sendMetadata(new int[] { 5, 6, 7 }, 1, NONE);
		StepVerifier.create(sender.states().filter(s -> s == KVPoll.WAITING_FOR_INPUT).take(1))
				.expectNextCount(1).expectComplete().verify(T);
		sender.send(new int[] { 0, 1 }, NONE);
		sender.send(new int[] { 2 }, NONE);
		StepVerifier.create(Mono.when(sender.completion(), receiver.completion())).expectComplete().verify(T);
		assertThat(decodeMemory.verify(1, new int[] { 5, 6, 7 }, 1, NONE)).isNull();

		// Room 2 fails: decode gives up after prefill got the request.
		KVSender sender2 = prefill.sender(2);
		sender2.init(1, -1);
		KVReceiver receiver2 = decode.receiver(bootstrap, 2);
		receiver2.sendMetadata(new int[] { 3 }, -1, NONE);
		StepVerifier.create(sender2.states().filter(s -> s == KVPoll.WAITING_FOR_INPUT).take(1))
				.expectNextCount(1).expectComplete().verify(T);
		receiver2.abort("decode gave up");
		StepVerifier.create(receiver2.completion()).expectError(KVTransferException.class).verify(T);
		StepVerifier.create(sender2.completion()).expectError(KVTransferException.class).verify(T);

		List<SpanData> spans = awaitSpans(5);
		SpanData outer = only(spans, s -> s.getName().equals("decode request"));
		SpanData decode1 = only(spans, s -> s.getName().equals("kvferry.decode.room") && room(s) == 1);
		SpanData prefill1 = only(spans, s -> s.getName().equals("kvferry.prefill.room") && room(s) == 1);
		SpanData decode2 = only(spans, s -> s.getName().equals("kvferry.decode.room") && room(s) == 2);
		SpanData prefill2 = only(spans, s -> s.getName().equals("kvferry.prefill.room") && room(s) == 2);

		// One trace: caller → decode room → prefill room, across the socket.
		assertThat(decode1.getTraceId()).isEqualTo(outer.getTraceId());
		assertThat(decode1.getParentSpanId()).isEqualTo(outer.getSpanId());
		assertThat(prefill1.getTraceId()).isEqualTo(decode1.getTraceId());
		assertThat(prefill1.getParentSpanId()).isEqualTo(decode1.getSpanId());
		assertThat(prefill2.getParentSpanId()).isEqualTo(decode2.getSpanId());
		assertThat(decode2.getTraceId()).as("a room opened outside any span starts its own trace")
				.isNotEqualTo(decode1.getTraceId());
		assertThat(decode1.getKind()).isEqualTo(SpanKind.CLIENT);
		assertThat(prefill1.getKind()).isEqualTo(SpanKind.SERVER);
		assertThat(decode1.getAttributes().get(OpenTelemetryRoomTracer.MANAGER)).isEqualTo(decode.toString());

		assertThat(events(decode1)).containsSubsequence("bootstrap_resolved", "handshake_done", "request_sent",
				"first_byte", "rank_done");
		assertThat(events(prefill1)).containsExactly("request_received", "first_byte", "chunk_sent", "chunk_sent");
		assertThat(prefill1.getEvents().stream().filter(e -> e.getName().equals("chunk_sent"))
				.map(e -> e.getAttributes().get(OpenTelemetryRoomTracer.VALUE))).containsExactly(2L, 1L);
		assertThat(decode1.getStatus().getStatusCode()).isEqualTo(StatusCode.OK);
		assertThat(prefill1.getStatus().getStatusCode()).isEqualTo(StatusCode.OK);
		// Prefill's span starts when its room opened there (the sender came before decode's request).
		assertThat(prefill1.getStartEpochNanos()).isLessThanOrEqualTo(decode1.getStartEpochNanos() + 1_000_000);

		// Each side says how the room travelled and where its time went there.
		assertThat(decode1.getAttributes().get(OpenTelemetryRoomTracer.PATH)).isEqualTo("tcp");
		assertThat(prefill1.getAttributes().get(OpenTelemetryRoomTracer.PATH)).isEqualTo("tcp");
		assertThat(phases(decode1)).isEqualTo(receiver.phases());
		assertThat(phases(prefill1)).isEqualTo(sender.phases());
		assertThat(decode1.getAttributes().get(OpenTelemetryRoomTracer.phase(RoomPhases.Phase.WIRE))).isNotNull();
		assertThat(decode1.getAttributes().get(OpenTelemetryRoomTracer.phase(RoomPhases.Phase.WAITING_FOR_ENGINE)))
				.as("a phase decode did not go through has no attribute").isNull();
		assertThat(prefill1.getAttributes().get(OpenTelemetryRoomTracer.phase(RoomPhases.Phase.WAITING_FOR_ENGINE)))
				.isNotNull();
		assertThat(prefill2.getAttributes().get(OpenTelemetryRoomTracer.phase(RoomPhases.Phase.WIRE)))
				.as("room 2 failed before any byte moved").isNull();
		assertThat(phases(decode2)).isEqualTo(receiver2.phases());

		assertThat(decode2.getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
		assertThat(decode2.getStatus().getDescription()).contains("decode gave up");
		assertThat(decode2.getAttributes().get(OpenTelemetryRoomTracer.FAILURE_CAUSE)).isEqualTo("aborted");
		assertThat(prefill2.getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
		assertThat(prefill2.getAttributes().get(OpenTelemetryRoomTracer.FAILURE_CAUSE)).isEqualTo("aborted");
		assertThat(prefill2.getStatus().getDescription()).contains("Aborted by decode").contains("decode gave up");
	}

	/** @return the finished spans once there are {@code n} (a room's span ends just after its terminal state) */
	private List<SpanData> awaitSpans(int n) {
		return Flux.interval(Duration.ofMillis(10))
				.map(i -> exporter.getFinishedSpanItems())
				.filter(list -> list.size() >= n)
				.next()
				.block(T);
	}

	private static SpanData only(List<SpanData> spans, Predicate<SpanData> which) {
		List<SpanData> found = spans.stream().filter(which).toList();
		assertThat(found).as("in %s", spans).hasSize(1);
		return found.get(0);
	}

	private static long room(SpanData span) {
		Long room = span.getAttributes().get(OpenTelemetryRoomTracer.ROOM);
		return room == null ? -1 : room;
	}

	/** @return the phases the span's attributes say */
	private static RoomPhases phases(SpanData span) {
		long[] nanos = new long[RoomPhases.Phase.values().length];
		for (RoomPhases.Phase p : RoomPhases.Phase.values()) {
			Long n = span.getAttributes().get(OpenTelemetryRoomTracer.phase(p));
			nanos[p.ordinal()] = n == null ? -1 : n;
		}
		return RoomPhases.ofNanos(nanos);
	}

	private static List<String> events(SpanData span) {
		return span.getEvents().stream().map(EventData::getName).toList();
	}
}
