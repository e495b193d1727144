package io.kvferry;

import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;

import org.jspecify.annotations.Nullable;

/**
 * Where a room's time went on one manager, phase by phase, from its first state to its last. The phases follow one
 * another without gap, so those present add up to the room's duration; a phase the room never entered on this side is
 * absent (not zero). A failed room's last phase runs until it failed. Known once the room ended:
 * {@link KVReceiver#phases()}, {@link KVSender#phases()}, terminal {@link KVStatusEvent}s, and the recorder and tracer
 * hooks.
 *
 * <pre>{@code
 * receiver.completion().subscribe(ok -> log.info("room {}: {}", room, receiver.phases()));
 * // room 7: bootstrap 1.2 ms, waiting for peer 40.1 ms, wire 3.5 ms, landing 0.1 ms
 * }</pre>
 */
public final class RoomPhases {

	/** A room that has not ended (or a side that keeps no times): every phase absent. */
	public static final RoomPhases NONE = new RoomPhases(absentAll());

	private static final Phase[] PHASES = Phase.values();

	/** The phases, in the order a room passes them. */
	public enum Phase {
		/** Decode: from the receiver until every prefill rank of the room is resolved and connected. Absent on prefill. */
		BOOTSTRAP,
		/**
		 * Decode: from connected until the first byte of the room landed (prefill's compute included). Prefill: from the
		 * room's first state until every decode rank's request arrived.
		 */
		WAITING_FOR_PEER,
		/**
		 * Prefill: from the last decode request until the engine's first chunk went out (the engine's compute, zero
		 * when it sent early). Absent on decode, which cannot tell it from its wait for the peer.
		 */
		WAITING_FOR_ENGINE,
		/**
		 * From the first byte to the last: decode, first to last byte landed; prefill, first chunk handed to the
		 * transport until the last decode rank's Success was written behind the room's bytes. Later chunks of a
		 * chunked prefill are computed within it.
		 */
		WIRE,
		/** Decode: from the last byte landed until the room was verified and succeeded. Absent on prefill. */
		LANDING;

		private final String tag = name().toLowerCase(Locale.ROOT);

		/** @return a short name for metrics and traces: {@code bootstrap}, {@code waiting_for_peer}, ... */
		public String tag() {
			return tag;
		}
	}

	// Index = phase ordinal; -1 = absent.
	private final long[] nanos;

	private RoomPhases(long[] nanos) {
		this.nanos = nanos;
	}

	/**
	 * @param nanos each phase's nanoseconds in {@link Phase} order, negative for an absent phase
	 * @return the phases
	 */
	public static RoomPhases ofNanos(long... nanos) {
		Objects.requireNonNull(nanos, "nanos");
		if (nanos.length != PHASES.length) {
			throw new IllegalArgumentException("nanos : " + nanos.length + " values (expected: " + PHASES.length
					+ ", one per phase)");
		}
		long[] copy = new long[nanos.length];
		for (int i = 0; i < copy.length; i++) {
			copy[i] = nanos[i] < 0 ? -1 : nanos[i];
		}
		return new RoomPhases(copy);
	}

	private static long[] absentAll() {
		long[] none = new long[Phase.values().length];
		Arrays.fill(none, -1);
		return none;
	}

	/** @return whether the room went through {@code phase} on this side */
	public boolean has(Phase phase) {
		return nanos[phase.ordinal()] >= 0;
	}

	/** @return the phase's nanoseconds, or -1 when absent; no allocation */
	public long nanos(Phase phase) {
		return nanos[phase.ordinal()];
	}

	/** @return the phase's time, or empty when the room did not go through it on this side */
	public Optional<Duration> duration(Phase phase) {
		long n = nanos[phase.ordinal()];
		return n < 0 ? Optional.empty() : Optional.of(Duration.ofNanos(n));
	}

	/** @return the time until the peers were connected (decode), if present */
	public Optional<Duration> bootstrap() {
		return duration(Phase.BOOTSTRAP);
	}

	/** @return the time spent waiting for the peer, if present */
	public Optional<Duration> waitingForPeer() {
		return duration(Phase.WAITING_FOR_PEER);
	}

	/** @return the time spent waiting for the engine's first chunk (prefill), if present */
	public Optional<Duration> waitingForEngine() {
		return duration(Phase.WAITING_FOR_ENGINE);
	}

	/** @return the time from first to last byte, if any byte moved */
	public Optional<Duration> wire() {
		return duration(Phase.WIRE);
	}

	/** @return the time from the last byte to Success (decode), if present */
	public Optional<Duration> landing() {
		return duration(Phase.LANDING);
	}

	/** @return the sum of the phases present: the room's duration on this side, once it ended */
	public Duration total() {
		long sum = 0;
		for (long n : nanos) {
			sum += Math.max(0, n);
		}
		return Duration.ofNanos(sum);
	}

	@Override
	public boolean equals(@Nullable Object o) {
		return o instanceof RoomPhases other && Arrays.equals(nanos, other.nanos);
	}

	@Override
	public int hashCode() {
		return Arrays.hashCode(nanos);
	}

	/** @return e.g. {@code bootstrap 1.2 ms, waiting for peer 40.1 ms, wire 3.5 ms}; {@code no phases} when none */
	@Override
	public String toString() {
		StringBuilder b = new StringBuilder();
		for (Phase p : PHASES) {
			long n = nanos[p.ordinal()];
			if (n >= 0) {
				if (!b.isEmpty()) {
					b.append(", ");
				}
				b.append(p.tag().replace('_', ' ')).append(' ')
						.append(String.format(Locale.ROOT, "%.1f ms", n / 1_000_000.0));
			}
		}
		return b.isEmpty() ? "no phases" : b.toString();
	}
}
