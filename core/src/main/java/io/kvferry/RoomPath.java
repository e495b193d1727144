package io.kvferry;

import java.util.Locale;
import java.util.Objects;

/**
 * How a room's bytes travelled between a decode rank and its prefill ranks: the transport's kind, the connections a
 * room's bytes were dealt across, and whether TLS protected them. A receiver's {@link KVReceiver#path()} is known once
 * its prefill ranks are connected (Bootstrapping ended), a sender's {@link KVSender#path()} once a decode rank's request
 * arrived; both stay after the room ended.
 *
 * <pre>{@code
 * receiver.completion().subscribe(ok -> log.info("room {} came by {}", room, receiver.path()));
 * }</pre>
 *
 * @param kind the transport's kind
 * @param stripes connections per prefill rank the room's bytes were dealt across (0 when unknown)
 * @param tls whether TLS protected every connection
 */
public record RoomPath(Kind kind, int stripes, boolean tls) {

	/** Not known (yet): the room has no connected prefill rank, or a transport that does not say. */
	public static final RoomPath UNKNOWN = new RoomPath(Kind.UNKNOWN, 0, false);

	/** One in-process connection. */
	public static final RoomPath IN_MEMORY = new RoomPath(Kind.IN_MEMORY, 1, false);

	/** What carries the KV bytes. */
	public enum Kind {
		/** Not known. */
		UNKNOWN,
		/** In-process, between managers of one JVM. */
		IN_MEMORY,
		/** TCP sockets. */
		TCP,
		/** A shared-memory ring on the same host (control messages still go over TCP). */
		SHARED_MEMORY,
		/**
		 * UCX, with the KV bytes read one-sided: decode gets them from prefill's registered pages where the UCX
		 * transport does RMA natively (shared memory, InfiniBand and RoCE verbs); control messages as active messages.
		 */
		UCX_ONE_SIDED,
		/** UCX, with the KV bytes in active messages: where the UCX transport only emulates RMA (TCP). */
		UCX_ACTIVE_MESSAGES
	}

	/** A path a rank can insist on instead of falling back silently; see {@link KVManagerSpec#requirePath}. */
	public enum Requirement {
		/** Any path. The default. */
		ANY,
		/** KV bytes must move through same-host shared memory. */
		SHARED_MEMORY,
		/** Every connection must be protected by TLS. */
		TLS;

		/**
		 * @param path a room's path to one prefill rank
		 * @return whether it meets this requirement
		 */
		public boolean isMetBy(RoomPath path) {
			Objects.requireNonNull(path, "path");
			return switch (this) {
				case ANY -> true;
				case SHARED_MEMORY -> path.kind == Kind.SHARED_MEMORY;
				case TLS -> path.tls;
			};
		}

		/** @return words for a reason: "shared memory", "TLS" */
		public String describe() {
			return switch (this) {
				case ANY -> "any path";
				case SHARED_MEMORY -> "shared memory";
				case TLS -> "TLS";
			};
		}
	}

	public RoomPath {
		Objects.requireNonNull(kind, "kind");
		if (stripes < 0) {
			throw new IllegalArgumentException("stripes : " + stripes + " (expected: >= 0)");
		}
	}

	/**
	 * @param other another peer's path of the same room
	 * @return the path that holds for both: the kind when they agree (else {@link Kind#UNKNOWN}), the fewer stripes,
	 *         TLS only when both had it
	 */
	public RoomPath and(RoomPath other) {
		Objects.requireNonNull(other, "other");
		if (this == UNKNOWN || equals(other)) {
			return other;
		}
		if (other == UNKNOWN) {
			return this;
		}
		return new RoomPath(kind == other.kind ? kind : Kind.UNKNOWN, Math.min(stripes, other.stripes),
				tls && other.tls);
	}

	/** @return a short tag for metrics and traces: {@code tcp}, {@code tcp_tls}, {@code shared_memory}, ... */
	public String tag() {
		String k = kind.name().toLowerCase(Locale.ROOT);
		return tls ? k + "_tls" : k;
	}

	@Override
	public String toString() {
		return switch (kind) {
			case UNKNOWN -> "unknown path";
			case IN_MEMORY -> "in-memory";
			case TCP -> "TCP with " + stripes + (stripes == 1 ? " stripe" : " stripes") + (tls ? ", TLS" : "");
			case SHARED_MEMORY -> "shared memory (" + stripes + (stripes == 1 ? " stripe" : " stripes") + ")";
			case UCX_ONE_SIDED -> "UCX one-sided (" + stripes + (stripes == 1 ? " stripe" : " stripes") + ")";
			case UCX_ACTIVE_MESSAGES -> "UCX active messages (" + stripes + (stripes == 1 ? " stripe" : " stripes")
					+ ")";
		};
	}
}
