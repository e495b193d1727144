/**
 * OpenTelemetry traces of kvferry rooms: {@link io.kvferry.tracing.otel.OpenTelemetryRoomTracer} plugs into
 * {@link io.kvferry.KVManagerSpec#tracer(io.kvferry.RoomTracer)}.
 */
@NullMarked
package io.kvferry.tracing.otel;

import org.jspecify.annotations.NullMarked;
