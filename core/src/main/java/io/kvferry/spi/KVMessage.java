package io.kvferry.spi;

import java.util.Arrays;
import java.util.Objects;

import io.kvferry.FailureCause;
import io.kvferry.KVPoll;
import io.kvferry.RoomClaim;

/**
 * The control messages of the transfer protocol. Decode sends {@link Hello}, {@link Join}, {@link TransferRequest},
 * {@link Renew}, {@link Abort} and {@link Layout}; prefill sends {@link HelloAck}, {@link Joined}, {@link Reject}, {@link Status},
 * {@link Fence}, {@link AbortAck} and {@link Draining}. On one connection messages and data blocks arrive in the order
 * they were sent.
 *
 * <p>One decode rank and one prefill rank may talk over several connections, its stripes: stripe 0 carries the
 * handshake and every control message, and a room's data blocks are dealt across all stripes. Each further stripe
 * opens with a {@link Join} naming the session that stripe 0's handshake started.
 */
public sealed interface KVMessage {

	/**
	 * Version of the message set and of the transport handshake; a peer with another version is rejected in the
	 * handshake. 7: {@link Hello} and {@link HelloAck} carry the sender's incarnation. 8: {@link HelloAck} carries
	 * prefill's lease period, decode renews its rooms' leases with {@link Renew}, and data frames may carry many pieces
	 * of a room ({@link ScatterHeader}). 9: a Success {@link Status} names the stripes that send a {@link Fence} for the
	 * room ({@link Status#fences()}); a stripe that carried none of its bytes sends none. 10: {@link Status} and
	 * {@link Abort} carry a failure code ({@link FailureCodes}) and a retry hint; a layout carries the model's id,
	 * layer count and KV layout, which the handshake compares (the layout since 11 only to say where it re-lays); every
	 * number a peer announces has bounds. 11: a {@link TransferRequest} carries a {@link RoomClaim}, so that a
	 * replacement decode can take a room over; decode announces a new layout with {@link Layout} after it
	 * re-registered its regions.
	 */
	int PROTOCOL_VERSION = 11;

	/** {@link HelloAck#leaseMillis()} of a prefill rank that keeps no leases: decode sends no {@link Renew}. */
	long NO_LEASE = 0;

	/** {@link Hello#incarnation()} and {@link HelloAck#incarnation()} of a sender that names none. */
	long UNKNOWN_INCARNATION = 0;

	/** {@link TransferRequest#traceContext()} when the room is not traced. */
	String NO_TRACE_CONTEXT = "";

	/** {@link Status#checksum()} when the sender computed none. */
	long NO_CHECKSUM = -1;

	/**
	 * Longest reason a {@link Reject}, {@link Status}, {@link Abort} or {@link Draining} carries, in bytes of UTF-8: a
	 * longer one is cut to it when the message is made, and a receiver refuses a longer one.
	 */
	int MAX_REASON_BYTES = 8192;

	/**
	 * Largest retry hint of an overloaded room's {@link Status} or {@link Abort}, in milliseconds: a rank should not
	 * park a router's retries for longer. A larger hint is read as this one.
	 */
	int MAX_RETRY_AFTER_MILLIS = 300_000;

	/**
	 * First message on a connection, decode → prefill: the decode rank's layout (SGLang's KV-args registration).
	 *
	 * @param protocolVersion {@link #PROTOCOL_VERSION} of the sender
	 * @param layout the decode rank's layout
	 * @param checksums whether decode wants a CRC32C of each room's bytes with every {@link Status}
	 * @param stripes how many connections decode opens to this rank, this one included (1: only this one); prefill
	 *        refuses more than it admits
	 * @param incarnation the decode rank's incarnation (a random id drawn when its manager started), or
	 *        {@link #UNKNOWN_INCARNATION}
	 */
	record Hello(int protocolVersion, PeerLayout layout, boolean checksums, int stripes, long incarnation)
			implements KVMessage {
		public Hello {
			Objects.requireNonNull(layout, "layout");
		}

		/** A hello that names no incarnation. */
		public Hello(int protocolVersion, PeerLayout layout, boolean checksums, int stripes) {
			this(protocolVersion, layout, checksums, stripes, UNKNOWN_INCARNATION);
		}

		/** A hello over one connection. */
		public Hello(int protocolVersion, PeerLayout layout, boolean checksums) {
			this(protocolVersion, layout, checksums, 1);
		}

		/** A hello over one connection that asks for no checksums. */
		public Hello(int protocolVersion, PeerLayout layout) {
			this(protocolVersion, layout, false);
		}
	}

	/**
	 * Prefill accepts the handshake and tells its own layout.
	 *
	 * @param layout the prefill rank's layout
	 * @param token names the session in the {@link Join} of each further stripe (unguessable; 0 for one stripe)
	 * @param incarnation the prefill rank's incarnation (the one its registration carries), or
	 *        {@link #UNKNOWN_INCARNATION}
	 * @param leaseMillis how long prefill holds a room decode asked for without hearing a {@link Renew} of it, in
	 *        milliseconds; decode renews every third of it. {@link #NO_LEASE}: prefill keeps no leases
	 */
	record HelloAck(PeerLayout layout, long token, long incarnation, long leaseMillis) implements KVMessage {

		/**
		 * Shortest lease: decode renews every third of it, one message per session and tick, so a shorter one would
		 * only make it send renewals (and this rank read them) many times a second.
		 */
		public static final long MIN_LEASE_MILLIS = 1000;

		/** Longest lease: an hour, past any room's timeouts. */
		public static final long MAX_LEASE_MILLIS = 3_600_000;

		public HelloAck {
			Objects.requireNonNull(layout, "layout");
			if (leaseMillis != NO_LEASE && (leaseMillis < MIN_LEASE_MILLIS || leaseMillis > MAX_LEASE_MILLIS)) {
				throw new IllegalArgumentException("leaseMillis : " + leaseMillis + " (expected: " + NO_LEASE
						+ " for none, or " + MIN_LEASE_MILLIS + ".." + MAX_LEASE_MILLIS + ")");
			}
		}

		/** An acknowledgement from a rank that keeps no leases. */
		public HelloAck(PeerLayout layout, long token, long incarnation) {
			this(layout, token, incarnation, NO_LEASE);
		}

		/** An acknowledgement that names no incarnation. */
		public HelloAck(PeerLayout layout, long token) {
			this(layout, token, UNKNOWN_INCARNATION);
		}

		/** The acknowledgement of a session over one connection. */
		public HelloAck(PeerLayout layout) {
			this(layout, 0);
		}
	}

	/**
	 * First message on a further stripe, decode → prefill: this connection is stripe {@code stripe} of the session
	 * whose {@link HelloAck} carried {@code token}. Prefill answers {@link Joined}, or {@link Reject} and closes.
	 *
	 * @param token the session's token
	 * @param stripe index of this stripe, 1 .. stripes - 1
	 */
	record Join(long token, int stripe) implements KVMessage {
	}

	/**
	 * Prefill attached the connection as stripe {@code stripe}; from now on it may carry the session's data.
	 *
	 * @param stripe index of this stripe
	 */
	record Joined(int stripe) implements KVMessage {
	}

	/**
	 * Prefill sent everything of the room on this stripe, prefill → decode, on every stripe but 0 before the room's
	 * Success on stripe 0: decode judges the Success only once each stripe's fence arrived, so that a Success never
	 * overtakes bytes still travelling on another connection.
	 *
	 * @param room the room
	 * @param bytes payload bytes sent for the room on this stripe
	 * @param checksum CRC32C of those bytes in the order sent, when decode asked for it; else {@link #NO_CHECKSUM}
	 */
	record Fence(long room, long bytes, long checksum) implements KVMessage {
		public Fence {
			if (bytes < 0 || checksum < NO_CHECKSUM || checksum > 0xFFFF_FFFFL) {
				throw new IllegalArgumentException("fence : bytes=" + bytes + " checksum=" + checksum
						+ " (expected: bytes >= 0, checksum a CRC32C or -1)");
			}
		}
	}

	/**
	 * Prefill refuses the handshake; the connection closes after it.
	 *
	 * @param reason names the incompatible values
	 */
	record Reject(String reason) implements KVMessage {
		public Reject {
			reason = Texts.cut(Objects.requireNonNull(reason, "reason"), MAX_REASON_BYTES);
		}
	}

	/**
	 * Decode asks for one room's KV, decode → each target prefill rank (SGLang's transfer metadata).
	 *
	 * @param room the room
	 * @param dstPages destination page indices (empty for a dummy target)
	 * @param auxIndex destination aux row, or -1 for none / dummy
	 * @param stateIndices destination state slots (empty when none)
	 * @param requiredDstInfoNum how many decode ranks ask the same prefill rank for this room
	 * @param dummy true when this prefill rank only has to acknowledge (MLA fan-in)
	 * @param traceContext decode's trace context for the room, opaque to the library (a W3C {@code traceparent} with
	 *        the tracer of {@code kvferry-tracing-otel}), or {@link #NO_TRACE_CONTEXT}; one longer than
	 *        {@link #MAX_TRACE_CONTEXT_BYTES} is not sent (the room is then untraced on prefill)
	 * @param decodePrefixLen tokens decode already holds (its prefix cache): {@code dstPages} cover the pages after
	 *        them, and prefill sends from that page on (SGLang's {@code decode_prefix_len})
	 * @param stateCounts how {@code stateIndices} splits into one list per state component, in order; empty when
	 *        the state regions declare no kinds (one list for all)
	 */
	record TransferRequest(long room, int[] dstPages, int auxIndex, int[] stateIndices, int requiredDstInfoNum,
			boolean dummy, String traceContext, int decodePrefixLen, int[] stateCounts, RoomClaim claim)
			implements KVMessage {
		/** Longest trace context, in bytes of UTF-8 (a W3C {@code traceparent} is 55). */
		public static final int MAX_TRACE_CONTEXT_BYTES = 1024;

		public TransferRequest {
			Objects.requireNonNull(dstPages, "dstPages");
			Objects.requireNonNull(stateIndices, "stateIndices");
			Objects.requireNonNull(traceContext, "traceContext");
			Objects.requireNonNull(stateCounts, "stateCounts");
			Objects.requireNonNull(claim, "claim");
			if (Texts.utf8Length(traceContext) > MAX_TRACE_CONTEXT_BYTES) {
				traceContext = NO_TRACE_CONTEXT;
			}
			if (requiredDstInfoNum < 1 || requiredDstInfoNum > PeerLayout.MAX_SIZE) {
				throw new IllegalArgumentException("requiredDstInfoNum : " + requiredDstInfoNum + " (expected: 1.."
						+ PeerLayout.MAX_SIZE + ")");
			}
			if (stateCounts.length > PeerLayout.MAX_REGIONS) {
				throw new IllegalArgumentException("stateCounts : " + stateCounts.length + " counts (expected: at most "
						+ PeerLayout.MAX_REGIONS + ", one per state component)");
			}
			if (decodePrefixLen < 0) {
				throw new IllegalArgumentException("decodePrefixLen : " + decodePrefixLen + " (expected: >= 0)");
			}
			long sum = 0;
			for (int c : stateCounts) {
				if (c < 0) {
					throw new IllegalArgumentException("stateCounts : " + Arrays.toString(stateCounts)
							+ " (expected: counts >= 0)");
				}
				sum += c;
			}
			if (stateCounts.length > 0 && sum != stateIndices.length) {
				throw new IllegalArgumentException("stateCounts : " + Arrays.toString(stateCounts) + " sum to " + sum
						+ " (expected: the " + stateIndices.length + " state indices)");
			}
		}

		/** A request without a hand-off: the room never moves to another decode. */
		public TransferRequest(long room, int[] dstPages, int auxIndex, int[] stateIndices, int requiredDstInfoNum,
				boolean dummy, String traceContext, int decodePrefixLen, int[] stateCounts) {
			this(room, dstPages, auxIndex, stateIndices, requiredDstInfoNum, dummy, traceContext, decodePrefixLen,
					stateCounts, RoomClaim.NONE);
		}

		/** A request without decode prefix and with one state index list for every state region. */
		public TransferRequest(long room, int[] dstPages, int auxIndex, int[] stateIndices, int requiredDstInfoNum,
				boolean dummy, String traceContext) {
			this(room, dstPages, auxIndex, stateIndices, requiredDstInfoNum, dummy, traceContext, 0, new int[0]);
		}

		/** A request that carries no trace context. */
		public TransferRequest(long room, int[] dstPages, int auxIndex, int[] stateIndices, int requiredDstInfoNum,
				boolean dummy) {
			this(room, dstPages, auxIndex, stateIndices, requiredDstInfoNum, dummy, NO_TRACE_CONTEXT);
		}

		@Override
		public boolean equals(Object o) {
			return o instanceof TransferRequest t && t.room == room && Arrays.equals(t.dstPages, dstPages)
					&& t.auxIndex == auxIndex && Arrays.equals(t.stateIndices, stateIndices)
					&& t.requiredDstInfoNum == requiredDstInfoNum && t.dummy == dummy
					&& t.traceContext.equals(traceContext) && t.decodePrefixLen == decodePrefixLen
					&& Arrays.equals(t.stateCounts, stateCounts) && t.claim.equals(claim);
		}

		@Override
		public int hashCode() {
			return Objects.hash(room, Arrays.hashCode(dstPages), auxIndex, Arrays.hashCode(stateIndices),
					requiredDstInfoNum, dummy, traceContext, decodePrefixLen, Arrays.hashCode(stateCounts));
		}

		@Override
		public String toString() {
			return "TransferRequest{room=" + room + ", dstPages=" + dstPages.length + ", auxIndex=" + auxIndex
					+ ", stateIndices=" + Arrays.toString(stateIndices) + ", requiredDstInfoNum=" + requiredDstInfoNum
					+ ", dummy=" + dummy + (traceContext.isEmpty() ? "" : ", traceContext=" + traceContext)
					+ (decodePrefixLen == 0 ? "" : ", decodePrefixLen=" + decodePrefixLen)
					+ (stateCounts.length == 0 ? "" : ", stateCounts=" + Arrays.toString(stateCounts)) + '}';
		}
	}

	/**
	 * A room's outcome on one prefill rank, prefill → decode. A Success says what the rank sent the decode rank for the
	 * room, so that decode can check it against what landed: a Success whose bytes did not all arrive fails the
	 * room, whatever path lost them.
	 *
	 * @param room the room
	 * @param status {@link KVPoll#SUCCESS} or {@link KVPoll#FAILED}
	 * @param prefillRank SGLang's prefill unique rank (tp rank × pp size × cp size + pp rank × cp size + cp rank)
	 * @param reason why it failed; empty on success
	 * @param bytes payload bytes sent for the room (KV, state and aux), on all stripes together
	 * @param checksum CRC32C of the bytes sent on stripe 0 in the order sent (each other stripe's is in its
	 *        {@link Fence}), when decode asked for it; else {@link #NO_CHECKSUM}
	 * @param fences the stripes that send a {@link Fence} for the room, bit {@code k} for stripe {@code k} (never
	 *        stripe 0): those that carried some of its bytes; 0 when only stripe 0 did, and on a failure
	 * @param code why it failed, a {@link FailureCodes} code; {@link FailureCodes#NONE} on Success
	 * @param retryAfterMillis with {@link FailureCause#OVERLOAD}: when the rank expects to admit rooms again, in
	 *        milliseconds, at most {@link #MAX_RETRY_AFTER_MILLIS} (a larger one is read as it); 0 for no hint
	 */
	record Status(long room, KVPoll status, int prefillRank, String reason, long bytes, long checksum, int fences,
			int code, int retryAfterMillis) implements KVMessage {
		public Status {
			Objects.requireNonNull(status, "status");
			reason = Texts.cut(Objects.requireNonNull(reason, "reason"), MAX_REASON_BYTES);
			if (prefillRank < 0) {
				throw new IllegalArgumentException("status : prefillRank=" + prefillRank + " (expected: >= 0)");
			}
			if (bytes < 0 || checksum < NO_CHECKSUM || checksum > 0xFFFF_FFFFL) {
				throw new IllegalArgumentException("status : bytes=" + bytes + " checksum=" + checksum
						+ " (expected: bytes >= 0, checksum a CRC32C or -1)");
			}
			if (fences < 0 || fences > MAX_FENCES || (fences & 1) != 0) {
				throw new IllegalArgumentException("status : fences=0x" + Integer.toHexString(fences)
						+ " (expected: bits of stripes 1..7)");
			}
			retryAfterMillis = retryAfter(code, retryAfterMillis);
			if (status == KVPoll.SUCCESS && (code != FailureCodes.NONE || retryAfterMillis != 0)) {
				throw new IllegalArgumentException("status : Success with code=" + code + " retryAfterMillis="
						+ retryAfterMillis + " (expected: 0 and 0)");
			}
		}

		/** The largest {@link #fences()}: stripes 1..7 all fence the room (a session has at most 8 stripes). */
		public static final int MAX_FENCES = 0xFE;

		/** A status that names no failure code. */
		public Status(long room, KVPoll status, int prefillRank, String reason, long bytes, long checksum,
				int fences) {
			this(room, status, prefillRank, reason, bytes, checksum, fences, FailureCodes.NONE, 0);
		}

		/** A status whose bytes all went on stripe 0. */
		public Status(long room, KVPoll status, int prefillRank, String reason, long bytes, long checksum) {
			this(room, status, prefillRank, reason, bytes, checksum, 0);
		}

		/**
		 * @return a Failed status of a room that failed with {@code cause}, moving no bytes
		 * @param retryAfterMillis the hint of an overloaded room, or 0
		 */
		public static Status failed(long room, int prefillRank, FailureCause cause, String reason,
				int retryAfterMillis) {
			return new Status(room, KVPoll.FAILED, prefillRank, reason, 0, NO_CHECKSUM, 0, FailureCodes.code(cause),
					retryAfterMillis);
		}

		/** @return the cause the receiver gives the room ({@link FailureCodes#peerCause}) */
		public FailureCause cause() {
			return FailureCodes.peerCause(code);
		}

		/** A status that reports no bytes and no checksum (a failure, or a rank that moved nothing). */
		public Status(long room, KVPoll status, int prefillRank, String reason) {
			this(room, status, prefillRank, reason, 0, NO_CHECKSUM);
		}
	}

	/**
	 * Decode still waits for these rooms, decode → prefill, on the session's stripe 0 every third of the lease period
	 * the {@link HelloAck} announced: one message per session and tick lists every room decode asked of the rank and
	 * holds (several when a session holds more than {@link #MAX_ROOMS} rooms). Prefill renews each listed room's lease
	 * and ignores rooms it does not hold for this session; a room not renewed within the lease period fails on prefill
	 * and its pages are freed.
	 *
	 * @param rooms the rooms, at most {@link #MAX_ROOMS}
	 */
	record Renew(long[] rooms) implements KVMessage {

		/** Most rooms one message lists: 64 KiB of room ids. */
		public static final int MAX_ROOMS = 8192;

		public Renew {
			Objects.requireNonNull(rooms, "rooms");
			if (rooms.length > MAX_ROOMS) {
				throw new IllegalArgumentException("rooms : " + rooms.length + " (expected: at most " + MAX_ROOMS
						+ ")");
			}
		}

		@Override
		public boolean equals(Object o) {
			return o instanceof Renew r && Arrays.equals(r.rooms, rooms);
		}

		@Override
		public int hashCode() {
			return Arrays.hashCode(rooms);
		}

		@Override
		public String toString() {
			return "Renew{rooms=" + rooms.length + '}';
		}
	}

	/**
	 * Decode gave up a room; prefill stops sending it and answers {@link AbortAck}.
	 *
	 * @param room the room
	 * @param reason why
	 * @param code why, a {@link FailureCodes} code: {@link FailureCause#OVERLOAD} when decode turned the room away over
	 *        a bound, else {@link FailureCause#ABORTED} or the cause of the room's failure on decode
	 * @param retryAfterMillis with {@link FailureCause#OVERLOAD}: decode's retry hint in milliseconds, at most
	 *        {@link #MAX_RETRY_AFTER_MILLIS}; 0 for no hint
	 */
	record Abort(long room, String reason, int code, int retryAfterMillis) implements KVMessage {
		public Abort {
			reason = Texts.cut(Objects.requireNonNull(reason, "reason"), MAX_REASON_BYTES);
			retryAfterMillis = retryAfter(code, retryAfterMillis);
		}

		/** An abort of a room decode gave up on ({@link FailureCause#ABORTED}). */
		public Abort(long room, String reason) {
			this(room, reason, FailureCodes.code(FailureCause.ABORTED), 0);
		}

		/** @return the cause the receiver gives the room ({@link FailureCodes#peerCause}) */
		public FailureCause cause() {
			return FailureCodes.peerCause(code);
		}
	}

	/**
	 * Prefill will send no more bytes for the room on this connection: everything before this message was all. Sent
	 * on every stripe of the session.
	 *
	 * @param room the room
	 */
	record AbortAck(long room) implements KVMessage {
	}

	/**
	 * Prefill drains, prefill → decode: from now on it refuses every room it does not hold yet (each with a
	 * {@link Status} {@link KVPoll#FAILED} carrying {@code reason}), and finishes the rooms it holds. Decode then fails
	 * new rooms for this rank at once instead of asking.
	 *
	 * @param reason names the draining rank
	 */
	record Draining(String reason) implements KVMessage {
		public Draining {
			reason = Texts.cut(Objects.requireNonNull(reason, "reason"), MAX_REASON_BYTES);
		}
	}

	/**
	 * Decode re-registered its regions, decode → prefill, on stripe 0 of a session whose handshake passed: from now on
	 * its layout is {@code layout}, and prefill plans every later request of the session against it. Decode sends it
	 * only once no room it holds can be written any more, and before any request made against the new regions, so the
	 * order of stripe 0 is what tells the two layouts apart.
	 *
	 * @param generation counts the decode rank's re-registrations, 1 for its first; each message of a session names a
	 *        larger one than the last, at most {@link #MAX_GENERATION}
	 * @param layout the decode rank's new layout; its model fingerprint is the one of the handshake
	 */
	record Layout(int generation, PeerLayout layout) implements KVMessage {

		/** Largest generation: one re-registration a second would take 68 years to reach it. */
		public static final int MAX_GENERATION = Integer.MAX_VALUE;

		public Layout {
			Objects.requireNonNull(layout, "layout");
			if (generation < 1) {
				throw new IllegalArgumentException("generation : " + generation + " (expected: 1.." + MAX_GENERATION
						+ ")");
			}
		}
	}

	/**
	 * Checks a failure code and its retry hint: the code one unsigned byte, the hint not negative; a hint above
	 * {@link #MAX_RETRY_AFTER_MILLIS} is read as it, since a hint only advises.
	 *
	 * @return the hint to keep
	 */
	private static int retryAfter(int code, int retryAfterMillis) {
		if (code < FailureCodes.NONE || code > FailureCodes.MAX) {
			throw new IllegalArgumentException("code : " + code + " (expected: " + FailureCodes.NONE + ".."
					+ FailureCodes.MAX + ")");
		}
		if (retryAfterMillis < 0) {
			throw new IllegalArgumentException("retryAfterMillis : " + retryAfterMillis + " (expected: >= 0)");
		}
		return Math.min(retryAfterMillis, MAX_RETRY_AFTER_MILLIS);
	}
}
