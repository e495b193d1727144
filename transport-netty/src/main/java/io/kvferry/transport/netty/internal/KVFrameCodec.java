package io.kvferry.transport.netty.internal;

import java.time.Duration;
import java.util.Arrays;
import java.util.Objects;

import io.kvferry.KVFerryException;
import io.kvferry.ProtocolException;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVMessage;
import io.kvferry.transport.netty.internal.frame.ControlCodec;
import io.kvferry.transport.netty.internal.frame.ControlFrames;
import io.kvferry.transport.netty.internal.frame.DataHeaderCodec;
import io.kvferry.transport.netty.internal.frame.FrameReader;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;

/**
 * The kvferry wire protocol: stateless encoders and decoders of the preface, handshake frames, control frames and
 * data-frame headers.
 * {@link KVFrameDecoder} frames the byte stream and streams data payloads; this class only turns values into bytes and
 * back. Each control message type has its own codec in {@link ControlFrames}, the table keyed by the type byte that
 * {@link #encode} and {@link #decode} go through; the handshake frames and the data header have theirs beside it.
 *
 * <h2>Byte order and primitive types</h2>
 * Every integer is big-endian. {@code u8}/{@code u16}/{@code u32} are unsigned, {@code i32}/{@code i64} are two's
 * complement. {@code bool} is one byte, 0 or 1 (any other value is malformed). {@code string} is an {@code i32}
 * byte count {@code n} (0 &le; n &le; bytes left in the frame) followed by {@code n} bytes of UTF-8 (malformed
 * sequences decode to U+FFFD). {@code int[]} is an {@code i32} element count {@code n} (0 &le; 4n &le; bytes left)
 * followed by {@code n} {@code i32}. {@code region[]} is an {@code i32} count {@code n} (0 &le; 12n &le; bytes left)
 * followed by {@code n} times {@code i32 itemLen, i64 itemCount} (both &gt; 0).
 *
 * <h2>Preface</h2>
 * The first 6 bytes each side writes, before anything else, without waiting for the peer:
 * <pre>
 * offset 0  4 bytes  magic 0x4B 0x56 0x46 0x52 ("KVFR")
 * offset 4  u16      protocol version ({@link KVMessage#PROTOCOL_VERSION})
 * </pre>
 * A wrong magic ("not a kvferry peer") or another version closes the connection with that reason. Version 6 changed the
 * {@code AUTH} frame and the shared-secret proofs (they bind the endpoint the connecting side dialled), so a version-5
 * peer is refused here, before any {@code AUTH}.
 *
 * <h2>Handshake</h2>
 * Right after its preface each side writes one {@code AUTH} frame (below) with its flags, a nonce, the largest frame
 * it accepts, its heartbeat interval (the peer judges it silent after two of them) and, from the connecting side, the
 * endpoint it dialled ({@link DialledEndpoint}: {@code host:port} as
 * dialled, and the IP literal and port its socket reached; both empty from the accepting side), again without
 * waiting. Flag {@code 0x01} says the side has a shared secret; its nonce is then 32 random bytes (zeros otherwise).
 * Each side then cuts what it sends to the peer's {@code maxFrameLength}, so two sides with different limits still
 * work together.
 * <ul>
 * <li>Neither side has a secret: the handshake is complete when the peer's preface and {@code AUTH} arrived.</li>
 * <li>Both have one: proofs are {@code HMAC-SHA256(secret, "kvferry-auth-v2" || role || peerNonce || ownNonce ||
 * dialled endpoint)} with role {@code 'C'} for the connecting side and {@code 'A'} for the accepting one (exact bytes
 * on {@link SharedSecret}). On the accepting side's {@code AUTH} the connecting side writes its {@code AUTH_PROOF}.
 * The accepting side refuses a dialled endpoint that is not one of its names (its socket's local address, or an
 * advertised address; see {@code ListenerNames}), waits for the connecting side's proof, and only once it verified
 * writes its own {@code AUTH_PROOF} and completes; the connecting side completes when that proof verifies over the
 * endpoint it dialled itself. A wrong proof closes with "shared secret mismatch".</li>
 * <li>Only one side has one: both close ("peer did not prove the shared secret" on the side with the secret).</li>
 * </ul>
 * The accepting side reports why it refuses a peer during the handshake in a {@code REJECT} frame before closing, so
 * that the connecting side can say why; a {@code REJECT} before the handshake completed fails it with that reason.
 * Any other frame before the handshake completes, a second {@code AUTH} or an unexpected {@code AUTH_PROOF} closes the
 * connection; heartbeats are allowed. The secret itself never goes on the wire. With TLS, all of this runs inside
 * the TLS session.
 *
 * <h2>Frames</h2>
 * After the preface both directions carry frames:
 * <pre>
 * offset 0  u32  length: bytes after this field (type + body), &gt;= 1
 * offset 4  u8   type
 * offset 5  ...  body (length - 1 bytes)
 * </pre>
 * A control body is at most {@code maxFrameLength} bytes; a data frame's payload is at most {@code maxFrameLength}
 * bytes (its length field may exceed {@code maxFrameLength} by the 38 bytes of type and header); an {@code AUTH} body
 * is 49..649 bytes, an {@code AUTH_PROOF} body exactly 32, a heartbeat none. Any other announced length is malformed
 * and rejected before any byte of the body is buffered. A control body must be consumed exactly: missing or trailing
 * bytes are malformed.
 *
 * <h2>Frame types and bodies</h2>
 * <pre>
 * 0x01 HELLO             i32 protocolVersion, layout, bool checksums, i32 stripes (since version 5),
 *                        i64 incarnation (since version 7)
 * 0x02 HELLO_ACK         layout, i64 token (since version 5), i64 incarnation (since version 7),
 *                        i64 leaseMillis (since version 8; 0: no leases)
 * 0x03 REJECT            string reason
 * 0x04 TRANSFER_REQUEST  i64 room, int[] dstPages, i32 auxIndex, int[] stateIndices, i32 requiredDstInfoNum,
 *                        bool dummy, string traceContext (empty: not traced; since version 3),
 *                        i32 decodePrefixLen, int[] stateCounts (since version 4), claim proof, claim handoff
 *                        (each u8 count 0 or 32, then the bytes; since version 11)
 * 0x05 STATUS            i64 room, u8 status (KVPoll code), i32 prefillRank, string reason, i64 bytes,
 *                        i64 checksum (CRC32C, or -1 for none), u8 fences (since version 9),
 *                        u8 code (FailureCodes; 0 on Success), i32 retryAfterMillis (since version 10)
 * 0x06 ABORT             i64 room, string reason, u8 code, i32 retryAfterMillis (since version 10)
 * 0x07 ABORT_ACK         i64 room
 * 0x08 DRAINING          string reason (since version 3)
 * 0x09 JOIN              i64 token, i32 stripe (since version 5)
 * 0x0a JOINED            i32 stripe (since version 5)
 * 0x0b FENCE             i64 room, i64 bytes, i64 checksum (CRC32C, or -1 for none) (since version 5)
 * 0x0c RENEW             i32 count (0..8192), count x i64 room (since version 8)
 * 0x0d LAYOUT            i32 generation (1..2^31-1), layout (decode's after a re-registration; since version 11)
 * 0x10 HEARTBEAT         (empty body)
 * 0x11 AUTH              u8 flags (0x01: has a shared secret; other bits must be 0), 32 bytes nonce,
 *                        i32 maxFrameLength (1 KiB..1 GiB), i32 heartbeatMillis (10..600,000; since version 10),
 *                        string endpoint, string address (since version 6; each empty or host:port, at most 300
 *                        bytes, no space or control character; address an IP literal)
 * 0x12 AUTH_PROOF        32 bytes HMAC-SHA256
 * 0x20 DATA              header (37 bytes), then payload
 * 0x23 DATA_SCATTER      i64 room, u8 kind, i32 pieces, pieces x (i32 region, i64 dstOffset, i32 length), then the
 *                        pieces' bytes in order (since version 8; see {@code frame.ScatterCodec})
 * 0x13 SHM_OFFER         same-host frames (see {@code internal.shm.ShmFrames}); only between peers that both turned
 * 0x14 SHM_REPLY         the same-host path on: a peer that did not is never sent one
 * 0x21 DATA_SHM
 * 0x22 SHM_CREDIT
 *
 * layout (PeerLayout):   i32 engineRank,
 *                        8 x i32 parallel (attnTpSize, attnTpRank, attnDpSize, attnDpRank, systemDpSize,
 *                                          systemDpRank, ppSize, ppRank),
 *                        i32 pageSize, bool mla, string dtype, i32 kvHeadNum, i32 totalKvHeadNum, i32 startLayer,
 *                        i32 draftLayers,
 *                        region[] kv, region[] aux, region[] state,
 *                        2 x i32 cp (attnCpSize, attnCpRank), int[] stateKinds (StateKind ordinals),
 *                        int[] stateTpDims, bool allCpRanksTransfer, bool dsaCacheLayerSplit (since version 4),
 *                        string modelId, i32 modelLayers, u8 kvLayout (KVLayout ordinal; since version 10)
 *
 * DATA header:           offset 0   i64 room
 *                        offset 8   u8  kind (RegionKind ordinal: 0 KV, 1 AUX, 2 STATE)
 *                        offset 9   i32 region      (&gt;= 0)
 *                        offset 13  i64 dstOffset   (&gt;= 0)
 *                        offset 21  i32 chunkLen    (&gt;= 0)
 *                        offset 25  i64 dstStride   (&gt;= 0)
 *                        offset 33  i32 count       (&gt;= 0)
 *                        then chunkLen x count payload bytes, which must equal length - 38
 * </pre>
 * Values the records reject (a negative size, a rank outside its size, an unknown status code, a number past the
 * bounds the protocol documentation lists) make the frame malformed. Every decoder failure is a
 * {@link ProtocolException} naming the frame and the field.
 *
 * <p>Buffers: every {@code encode*} method returns a new buffer from the given allocator that the caller owns and must
 * write or release; decoders read the given buffer and never release it.
 */
public final class KVFrameCodec {

	/** "KVFR" as a big-endian {@code u32}. */
	public static final int MAGIC = 0x4B564652;
	/** Bytes of the preface: magic and version. */
	public static final int PREFACE_LENGTH = 6;
	/** Bytes of the length and type fields that start every frame. */
	public static final int FRAME_PREFIX_LENGTH = 5;
	/** Bytes of a data-frame header after the type. */
	public static final int DATA_HEADER_LENGTH = 37;

	public static final int TYPE_HELLO = 0x01;
	public static final int TYPE_HELLO_ACK = 0x02;
	public static final int TYPE_REJECT = 0x03;
	public static final int TYPE_TRANSFER_REQUEST = 0x04;
	public static final int TYPE_STATUS = 0x05;
	public static final int TYPE_ABORT = 0x06;
	public static final int TYPE_ABORT_ACK = 0x07;
	public static final int TYPE_DRAINING = 0x08;
	public static final int TYPE_JOIN = 0x09;
	public static final int TYPE_JOINED = 0x0A;
	public static final int TYPE_FENCE = 0x0B;
	public static final int TYPE_RENEW = 0x0C;
	/** Decode's layout after it re-registered its regions. */
	public static final int TYPE_LAYOUT = 0x0D;
	public static final int TYPE_HEARTBEAT = 0x10;
	public static final int TYPE_AUTH = 0x11;
	public static final int TYPE_AUTH_PROOF = 0x12;
	public static final int TYPE_DATA = 0x20;
	/** Many pieces of one room in one frame ({@link io.kvferry.spi.ScatterHeader}). */
	public static final int TYPE_DATA_SCATTER = 0x23;
	/** Same-host path: decode offers a shared staging ring. */
	public static final int TYPE_SHM_OFFER = 0x13;
	/** Same-host path: prefill accepts or refuses the ring. */
	public static final int TYPE_SHM_REPLY = 0x14;
	/** Same-host path: a data header whose payload waits in a ring slot. */
	public static final int TYPE_DATA_SHM = 0x21;
	/** Same-host path: decode hands a ring slot back. */
	public static final int TYPE_SHM_CREDIT = 0x22;

	/** {@code AUTH} flag: the sender has a shared secret and will prove it. */
	public static final int AUTH_FLAG_SECRET = 0x01;
	/**
	 * Fewest bytes of an {@code AUTH} body: flags, nonce, the largest frame the sender accepts, its heartbeat interval,
	 * two empty strings.
	 */
	public static final int AUTH_MIN_BODY_LENGTH = 1 + SharedSecret.NONCE_LENGTH + 4 + 4 + 4 + 4;
	/** Most bytes of an {@code AUTH} body: both strings of the dialled endpoint at their longest. */
	public static final int AUTH_MAX_BODY_LENGTH = AUTH_MIN_BODY_LENGTH + 2 * DialledEndpoint.MAX_LENGTH;
	/** Bytes of an {@code AUTH_PROOF} body. */
	public static final int AUTH_PROOF_BODY_LENGTH = SharedSecret.PROOF_LENGTH;

	private KVFrameCodec() {
	}

	/** @return whether {@code type} is a control message type (not heartbeat, not data) */
	public static boolean isControlType(int type) {
		return ControlFrames.forType(type) != null;
	}

	/** @return a name for log lines and errors, {@code "0x7f"} for unknown types */
	public static String typeName(int type) {
		ControlCodec<?> control = ControlFrames.forType(type);
		if (control != null) {
			return control.name();
		}
		switch (type) {
			case TYPE_HEARTBEAT:
				return "HEARTBEAT";
			case TYPE_AUTH:
				return "AUTH";
			case TYPE_AUTH_PROOF:
				return "AUTH_PROOF";
			case TYPE_DATA:
				return "DATA";
			case TYPE_DATA_SCATTER:
				return "DATA_SCATTER";
			case TYPE_SHM_OFFER:
				return "SHM_OFFER";
			case TYPE_SHM_REPLY:
				return "SHM_REPLY";
			case TYPE_DATA_SHM:
				return "DATA_SHM";
			case TYPE_SHM_CREDIT:
				return "SHM_CREDIT";
			default:
				return String.format("0x%02x", type);
		}
	}

	/**
	 * @param alloc where the buffer comes from
	 * @param version the protocol version to announce
	 * @return the 6 preface bytes; the caller owns the buffer
	 */
	public static ByteBuf encodePreface(ByteBufAllocator alloc, int version) {
		ByteBuf buf = alloc.buffer(PREFACE_LENGTH, PREFACE_LENGTH);
		buf.writeInt(MAGIC);
		buf.writeShort(version);
		return buf;
	}

	/** @return a heartbeat frame; the caller owns the buffer */
	public static ByteBuf encodeHeartbeat(ByteBufAllocator alloc) {
		ByteBuf buf = alloc.buffer(FRAME_PREFIX_LENGTH, FRAME_PREFIX_LENGTH);
		buf.writeInt(1);
		buf.writeByte(TYPE_HEARTBEAT);
		return buf;
	}

	/**
	 * @return whether {@code type} is a same-host frame type: a small body framed like a control frame and handed to
	 *         {@link KVFrameDecoder.Listener#onExtension}
	 */
	public static boolean isExtensionType(int type) {
		return type == TYPE_SHM_OFFER || type == TYPE_SHM_REPLY || type == TYPE_DATA_SHM || type == TYPE_SHM_CREDIT;
	}

	/**
	 * @param alloc where the buffer comes from
	 * @param auth the flags, nonce, frame limit and dialled endpoint to announce
	 * @return the {@code AUTH} frame; the caller owns the buffer
	 */
	public static ByteBuf encodeAuth(ByteBufAllocator alloc, Auth auth) {
		return AuthFrames.encodeAuth(alloc, auth);
	}

	/**
	 * @param alloc where the buffer comes from
	 * @param proof the {@value SharedSecret#PROOF_LENGTH}-byte proof
	 * @return the {@code AUTH_PROOF} frame; the caller owns the buffer
	 */
	public static ByteBuf encodeAuthProof(ByteBufAllocator alloc, byte[] proof) {
		return AuthFrames.encodeAuthProof(alloc, proof);
	}

	/**
	 * Decodes an {@code AUTH} body.
	 *
	 * @param body exactly the frame's body; read, not released
	 * @return the flags, nonce, frame limit and dialled endpoint
	 * @throws ProtocolException when the body is truncated or has trailing bytes, an unknown flag, a frame limit out of
	 *         range, or an endpoint that is too long or not {@code host:port}
	 */
	public static Auth decodeAuth(ByteBuf body) {
		return AuthFrames.decodeAuth(body);
	}

	/**
	 * Decodes an {@code AUTH_PROOF} body.
	 *
	 * @param body exactly the frame's body; read, not released
	 * @return the proof
	 * @throws ProtocolException when the body has another length
	 */
	public static byte[] decodeAuthProof(ByteBuf body) {
		return AuthFrames.decodeAuthProof(body);
	}

	/**
	 * Encodes the prefix and header of a data frame; the {@code header.payloadLength()} payload bytes must follow.
	 *
	 * @return 42 bytes: length, type and the 37-byte header; the caller owns the buffer
	 */
	public static ByteBuf encodeDataHeader(ByteBufAllocator alloc, DataHeader header) {
		return DataHeaderCodec.encode(alloc, header);
	}

	/**
	 * Writes the 37 header bytes of a data frame, as {@link #decodeDataHeader} reads them.
	 *
	 * @return {@code buf}
	 */
	public static ByteBuf writeDataHeader(ByteBuf buf, DataHeader header) {
		return DataHeaderCodec.write(buf, header);
	}

	/**
	 * Decodes the 37-byte header of a data frame.
	 *
	 * @param buf at least {@link #DATA_HEADER_LENGTH} readable bytes; the reader index advances past the header
	 * @return the header
	 * @throws ProtocolException when a field is out of range
	 */
	public static DataHeader decodeDataHeader(ByteBuf buf) {
		return DataHeaderCodec.read(buf);
	}

	/**
	 * Encodes a control message as one frame, with the codec its type has in {@link ControlFrames}.
	 *
	 * @param alloc where the buffer comes from
	 * @param message the message
	 * @param maxFrameLength the largest body the peer accepts
	 * @return the frame; the caller owns the buffer
	 * @throws KVFerryException when the body would exceed {@code maxFrameLength} (nothing is allocated then)
	 */
	public static ByteBuf encode(ByteBufAllocator alloc, KVMessage message, int maxFrameLength) {
		ControlCodec<?> codec = ControlFrames.forMessage(message);
		long body = codec.bodyLength(message);
		if (body > maxFrameLength) {
			throw new KVFerryException("cannot send " + message.getClass().getSimpleName() + ": body of " + body
					+ " bytes exceeds maxFrameLength " + maxFrameLength);
		}
		int size = FRAME_PREFIX_LENGTH + (int) body;
		ByteBuf buf = alloc.buffer(size, size);
		try {
			buf.writeInt(1 + (int) body);
			buf.writeByte(codec.type());
			codec.writeBody(buf, message);
		}
		catch (RuntimeException e) {
			buf.release();
			throw e;
		}
		return buf;
	}

	/**
	 * Decodes a control message body with the codec of its type in {@link ControlFrames}.
	 *
	 * @param type the frame's type, one of the control types
	 * @param body exactly the frame's body; read (its reader index advances), not released
	 * @return the message
	 * @throws ProtocolException when the type is no control type or the body is malformed
	 */
	public static KVMessage decode(int type, ByteBuf body) {
		FrameReader r = new FrameReader(body, typeName(type));
		ControlCodec<?> codec = ControlFrames.forType(type);
		if (codec == null) {
			throw new ProtocolException("unknown frame type " + typeName(type));
		}
		try {
			KVMessage message = codec.readBody(r);
			r.end();
			return message;
		}
		catch (IllegalArgumentException | NullPointerException e) {
			// A value the message's record refuses (a negative size, an unknown status code) is a malformed frame.
			throw r.malformed(e.getMessage());
		}
	}

	/**
	 * The body of an {@code AUTH} frame.
	 *
	 * @param hasSecret whether the sender has a shared secret (and will send a proof)
	 * @param nonce the sender's {@value SharedSecret#NONCE_LENGTH}-byte nonce
	 * @param maxFrameLength the largest control body and data payload the sender accepts
	 * @param heartbeatMillis the sender's heartbeat interval in milliseconds: it writes at least once per interval,
	 *        and the receiver judges it silent after two of them
	 * @param dialled what the sender dialled, when it is the connecting side; {@link DialledEndpoint#NONE} from the
	 *        accepting side
	 */
	public record Auth(boolean hasSecret, byte[] nonce, int maxFrameLength, int heartbeatMillis,
			DialledEndpoint dialled) {

		public Auth {
			Objects.requireNonNull(nonce, "nonce");
			Objects.requireNonNull(dialled, "dialled");
			if (nonce.length != SharedSecret.NONCE_LENGTH) {
				throw new IllegalArgumentException("nonce : " + nonce.length + " bytes (expected: "
						+ SharedSecret.NONCE_LENGTH + ")");
			}
		}

		/** A body that announces the default heartbeat interval. */
		public Auth(boolean hasSecret, byte[] nonce, int maxFrameLength, DialledEndpoint dialled) {
			this(hasSecret, nonce, maxFrameLength, TransportSettings.DEFAULT.heartbeatMillis(), dialled);
		}

		/** The accepting side's body: it dialled nothing; the default heartbeat interval. */
		public Auth(boolean hasSecret, byte[] nonce, int maxFrameLength) {
			this(hasSecret, nonce, maxFrameLength, DialledEndpoint.NONE);
		}

		/** @return the sender's heartbeat interval */
		public Duration heartbeatInterval() {
			return Duration.ofMillis(heartbeatMillis);
		}

		@Override
		public boolean equals(Object o) {
			return o instanceof Auth a && a.hasSecret == hasSecret && Arrays.equals(a.nonce, nonce)
					&& a.maxFrameLength == maxFrameLength && a.heartbeatMillis == heartbeatMillis
					&& a.dialled.equals(dialled);
		}

		@Override
		public int hashCode() {
			return Objects.hash(hasSecret, Arrays.hashCode(nonce), maxFrameLength, heartbeatMillis, dialled);
		}

		@Override
		public String toString() {
			return "Auth[hasSecret=" + hasSecret + ", maxFrameLength=" + maxFrameLength + ", heartbeatMillis="
					+ heartbeatMillis + ", dialled=" + dialled + "]";
		}
	}
}
