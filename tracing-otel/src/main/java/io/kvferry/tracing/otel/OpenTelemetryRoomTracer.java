package io.kvferry.tracing.otel;

import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

import io.kvferry.DisaggregationMode;
import io.kvferry.FailureCause;
import io.kvferry.KVPoll;
import io.kvferry.RoomPath;
import io.kvferry.RoomPhases;
import io.kvferry.RoomTrace;
import io.kvferry.RoomTracer;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.propagation.TextMapGetter;
import org.jspecify.annotations.Nullable;

/**
 * Traces rooms with OpenTelemetry: one span per room on each manager, {@code kvferry.decode.room} (kind CLIENT) and
 * {@code kvferry.prefill.room} (kind SERVER). Decode's span is a child of the span current on the thread that made the
 * receiver, if any; it travels to prefill as a W3C {@code traceparent} in the transfer request, so prefill's span is
 * its child and one trace covers both processes.
 *
 * <p>Each step is an event on the room's span ({@link RoomTrace.Event}, lower case: {@code bootstrap_resolved},
 * {@code handshake_done}, {@code request_sent}, {@code request_received}, {@code first_byte}, {@code chunk_sent},
 * {@code rank_done}, with a {@code kvferry.value} attribute where it has a figure). A room that failed ends with status
 * ERROR, its reason as the description and {@code kvferry.failure_cause} ({@link FailureCause#tag()}).
 *
 * <p>As it ends, each span says how the room travelled, {@code kvferry.path} ({@link RoomPath#tag()}: {@code tcp},
 * {@code tcp_tls}, {@code shared_memory}, {@code in_memory}, {@code unknown}), and where its time went on that side:
 * {@code kvferry.phase.<phase>_ns}, the nanoseconds of each phase the room went through ({@link RoomPhases.Phase#tag()}:
 * {@code bootstrap}, {@code waiting_for_peer}, {@code waiting_for_engine}, {@code wire}, {@code landing}); a phase
 * the room did not go through on that side has no attribute.
 *
 * <pre>{@code
 * RoomTracer tracer = OpenTelemetryRoomTracer.create(openTelemetry);
 * DecodeKVManager decode = KVManagerSpec.decode().tracer(tracer)...startNow();
 * }</pre>
 */
public final class OpenTelemetryRoomTracer implements RoomTracer {

	/** Instrumentation scope name of the spans. */
	public static final String SCOPE = "io.kvferry";
	/** The room id. */
	public static final AttributeKey<Long> ROOM = AttributeKey.longKey("kvferry.room");
	/** The manager's name. */
	public static final AttributeKey<String> MANAGER = AttributeKey.stringKey("kvferry.manager");
	/** Why the room failed ({@link FailureCause#tag()}); only on failed rooms. */
	public static final AttributeKey<String> FAILURE_CAUSE = AttributeKey.stringKey("kvferry.failure_cause");
	/** The figure of an event (pages, bytes, ranks). */
	public static final AttributeKey<Long> VALUE = AttributeKey.longKey("kvferry.value");
	/** How the room travelled ({@link RoomPath#tag()}). */
	public static final AttributeKey<String> PATH = AttributeKey.stringKey("kvferry.path");

	private static final RoomPhases.Phase[] PHASES = RoomPhases.Phase.values();
	private static final List<AttributeKey<Long>> PHASE_KEYS = Arrays.stream(PHASES)
			.map(p -> AttributeKey.longKey("kvferry.phase." + p.tag() + "_ns")).toList();

	private static final String TRACEPARENT = "traceparent";
	private static final String[] EVENT_NAMES = eventNames();
	private static final TextMapGetter<String> CARRIED = new TextMapGetter<>() {
		@Override
		public Iterable<String> keys(String carrier) {
			return List.of(TRACEPARENT);
		}

		@Override
		public @Nullable String get(@Nullable String carrier, String key) {
			return TRACEPARENT.equals(key) ? carrier : null;
		}
	};

	private final Tracer tracer;

	private OpenTelemetryRoomTracer(Tracer tracer) {
		this.tracer = tracer;
	}

	/** @return a tracer whose spans go to {@code openTelemetry}'s tracer provider */
	public static OpenTelemetryRoomTracer create(OpenTelemetry openTelemetry) {
		Objects.requireNonNull(openTelemetry, "openTelemetry");
		return new OpenTelemetryRoomTracer(openTelemetry.getTracer(SCOPE));
	}

	@Override
	public RoomTrace start(DisaggregationMode side, String manager, long room, String parentContext,
			long startEpochNanos) {
		boolean decode = side == DisaggregationMode.DECODE;
		Context parent = parentContext.isEmpty() ? Context.current()
				: W3CTraceContextPropagator.getInstance().extract(Context.root(), parentContext, CARRIED);
		Span span = tracer.spanBuilder(decode ? "kvferry.decode.room" : "kvferry.prefill.room")
				.setParent(parent)
				.setSpanKind(decode ? SpanKind.CLIENT : SpanKind.SERVER)
				.setStartTimestamp(startEpochNanos, TimeUnit.NANOSECONDS)
				.setAttribute(ROOM, room)
				.setAttribute(MANAGER, manager)
				.startSpan();
		return new SpanTrace(span, decode ? traceparent(span.getSpanContext()) : "");
	}

	/**
	 * @param phase a phase of a room
	 * @return the attribute of its nanoseconds, {@code kvferry.phase.<phase>_ns}
	 */
	public static AttributeKey<Long> phase(RoomPhases.Phase phase) {
		return PHASE_KEYS.get(phase.ordinal());
	}

	/** @return the W3C {@code traceparent} of {@code context}, or empty when it is not valid (a no-op tracer's) */
	static String traceparent(SpanContext context) {
		if (!context.isValid()) {
			return "";
		}
		return "00-" + context.getTraceId() + "-" + context.getSpanId() + "-" + context.getTraceFlags().asHex();
	}

	private static String[] eventNames() {
		RoomTrace.Event[] events = RoomTrace.Event.values();
		String[] names = new String[events.length];
		for (RoomTrace.Event e : events) {
			names[e.ordinal()] = e.name().toLowerCase(Locale.ROOT);
		}
		return names;
	}

	/** One room's span. */
	private static final class SpanTrace implements RoomTrace {

		private final Span span;
		private final String context;

		SpanTrace(Span span, String context) {
			this.span = span;
			this.context = context;
		}

		@Override
		public String context() {
			return context;
		}

		@Override
		public void event(Event event, long value) {
			String name = EVENT_NAMES[event.ordinal()];
			if (value == 0) {
				span.addEvent(name);
			}
			else {
				span.addEvent(name, Attributes.of(VALUE, value));
			}
		}

		@Override
		public void event(Event event, long value, long epochNanos) {
			String name = EVENT_NAMES[event.ordinal()];
			span.addEvent(name, value == 0 ? Attributes.empty() : Attributes.of(VALUE, value), epochNanos,
					TimeUnit.NANOSECONDS);
		}

		@Override
		public void travelled(RoomPath path, RoomPhases phases) {
			span.setAttribute(PATH, path.tag());
			for (RoomPhases.Phase p : PHASES) {
				long nanos = phases.nanos(p);
				if (nanos >= 0) {
					span.setAttribute(PHASE_KEYS.get(p.ordinal()), nanos);
				}
			}
		}

		@Override
		public void end(KVPoll outcome, @Nullable FailureCause cause, String reason) {
			status(outcome, cause, reason);
			span.end();
		}

		@Override
		public void end(KVPoll outcome, @Nullable FailureCause cause, String reason, long epochNanos) {
			status(outcome, cause, reason);
			span.end(epochNanos, TimeUnit.NANOSECONDS);
		}

		private void status(KVPoll outcome, @Nullable FailureCause cause, String reason) {
			if (outcome == KVPoll.SUCCESS) {
				span.setStatus(StatusCode.OK);
			}
			else {
				span.setStatus(StatusCode.ERROR, reason);
				span.setAttribute(FAILURE_CAUSE, cause == null ? FailureCause.OTHER.tag() : cause.tag());
			}
		}
	}
}
