package io.kvferry.transport.netty.internal;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

import io.kvferry.KVFerryException;
import io.kvferry.KVPoll;
import io.kvferry.ParallelLayout;
import io.kvferry.ProtocolException;
import io.kvferry.StateKind;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.PeerLayout;
import io.kvferry.spi.RegionKind;
import io.kvferry.spi.RegionLayout;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufUtil;

/**
 * The kvferry wire protocol: stateless encoders and decoders of the preface, handshake frames, control frames and
 * data-frame headers.
 * {@link KVFrameDecoder} frames the byte stream and streams data payloads; this class only turns values into bytes and
 * back.
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
 * it accepts and, from the connecting side, the endpoint it dialled ({@link DialledEndpoint}: {@code host:port} as
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
 * is 45..645 bytes, an {@code AUTH_PROOF} body exactly 32, a heartbeat none. Any other announced length is malformed
 * and rejected before any byte of the body is buffered. A control body must be consumed exactly: missing or trailing
 * bytes are malformed.
 *
 * <h2>Frame types and bodies</h2>
 * <pre>
 * 0x01 HELLO             i32 protocolVersion, layout, bool checksums, i32 stripes (since version 5)
 * 0x02 HELLO_ACK         layout, i64 token (since version 5)
 * 0x03 REJECT            string reason
 * 0x04 TRANSFER_REQUEST  i64 room, int[] dstPages, i32 auxIndex, int[] stateIndices, i32 requiredDstInfoNum,
 *                        bool dummy, string traceContext (empty: not traced; since version 3),
 *                        i32 decodePrefixLen, int[] stateCounts (since version 4)
 * 0x05 STATUS            i64 room, u8 status (KVPoll code), i32 prefillRank, string reason, i64 bytes,
 *                        i64 checksum (CRC32C, or -1 for none)
 * 0x06 ABORT             i64 room, string reason
 * 0x07 ABORT_ACK         i64 room
 * 0x08 DRAINING          string reason (since version 3)
 * 0x09 JOIN              i64 token, i32 stripe (since version 5)
 * 0x0a JOINED            i32 stripe (since version 5)
 * 0x0b FENCE             i64 room, i64 bytes, i64 checksum (CRC32C, or -1 for none) (since version 5)
 * 0x10 HEARTBEAT         (empty body)
 * 0x11 AUTH              u8 flags (0x01: has a shared secret; other bits must be 0), 32 bytes nonce,
 *                        i32 maxFrameLength (1 KiB..1 GiB), string endpoint, string address (since version 6;
 *                        each empty or host:port, at most 300 bytes, no space or control character; address an IP
 *                        literal)
 * 0x12 AUTH_PROOF        32 bytes HMAC-SHA256
 * 0x20 DATA              header (37 bytes), then payload
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
 *                        int[] stateTpDims, bool allCpRanksTransfer, bool dsaCacheLayerSplit (since version 4)
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
 * Values the records reject (a negative size, a rank outside its size, an unknown status code) make the frame
 * malformed. Every decoder failure is a {@link ProtocolException} naming the frame and the field.
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
	public static final int TYPE_HEARTBEAT = 0x10;
	public static final int TYPE_AUTH = 0x11;
	public static final int TYPE_AUTH_PROOF = 0x12;
	public static final int TYPE_DATA = 0x20;
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
	/** Fewest bytes of an {@code AUTH} body: flags, nonce, the largest frame the sender accepts, two empty strings. */
	public static final int AUTH_MIN_BODY_LENGTH = 1 + SharedSecret.NONCE_LENGTH + 4 + 4 + 4;
	/** Most bytes of an {@code AUTH} body: both strings of the dialled endpoint at their longest. */
	public static final int AUTH_MAX_BODY_LENGTH = AUTH_MIN_BODY_LENGTH + 2 * DialledEndpoint.MAX_LENGTH;
	/** Bytes of an {@code AUTH_PROOF} body. */
	public static final int AUTH_PROOF_BODY_LENGTH = SharedSecret.PROOF_LENGTH;

	private static final int PARALLEL_LENGTH = 8 * 4;
	private static final int REGION_LENGTH = 4 + 8;

	private KVFrameCodec() {
	}

	/** @return whether {@code type} is a control message type (not heartbeat, not data) */
	public static boolean isControlType(int type) {
		return type >= TYPE_HELLO && type <= TYPE_FENCE;
	}

	/** @return a name for log lines and errors, {@code "0x7f"} for unknown types */
	public static String typeName(int type) {
		switch (type) {
			case TYPE_HELLO:
				return "HELLO";
			case TYPE_HELLO_ACK:
				return "HELLO_ACK";
			case TYPE_REJECT:
				return "REJECT";
			case TYPE_TRANSFER_REQUEST:
				return "TRANSFER_REQUEST";
			case TYPE_STATUS:
				return "STATUS";
			case TYPE_ABORT:
				return "ABORT";
			case TYPE_ABORT_ACK:
				return "ABORT_ACK";
			case TYPE_DRAINING:
				return "DRAINING";
			case TYPE_JOIN:
				return "JOIN";
			case TYPE_JOINED:
				return "JOINED";
			case TYPE_FENCE:
				return "FENCE";
			case TYPE_HEARTBEAT:
				return "HEARTBEAT";
			case TYPE_AUTH:
				return "AUTH";
			case TYPE_AUTH_PROOF:
				return "AUTH_PROOF";
			case TYPE_DATA:
				return "DATA";
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

	/** @return whether {@code type} is a handshake frame type ({@code AUTH} or {@code AUTH_PROOF}) */
	public static boolean isAuthType(int type) {
		return type == TYPE_AUTH || type == TYPE_AUTH_PROOF;
	}

	/** @return the fewest body bytes of a handshake frame type */
	public static int authMinBodyLength(int type) {
		return type == TYPE_AUTH ? AUTH_MIN_BODY_LENGTH : AUTH_PROOF_BODY_LENGTH;
	}

	/** @return the most body bytes of a handshake frame type */
	public static int authMaxBodyLength(int type) {
		return type == TYPE_AUTH ? AUTH_MAX_BODY_LENGTH : AUTH_PROOF_BODY_LENGTH;
	}

	/**
	 * @param alloc where the buffer comes from
	 * @param auth the flags, nonce, frame limit and dialled endpoint to announce
	 * @return the {@code AUTH} frame; the caller owns the buffer
	 */
	public static ByteBuf encodeAuth(ByteBufAllocator alloc, Auth auth) {
		// The same bytes the proofs cover (SharedSecret hashes String.getBytes too).
		byte[] endpoint = auth.dialled().endpoint().getBytes(StandardCharsets.UTF_8);
		byte[] address = auth.dialled().address().getBytes(StandardCharsets.UTF_8);
		int body = AUTH_MIN_BODY_LENGTH + endpoint.length + address.length;
		int size = FRAME_PREFIX_LENGTH + body;
		ByteBuf buf = alloc.buffer(size, size);
		buf.writeInt(1 + body);
		buf.writeByte(TYPE_AUTH);
		buf.writeByte(auth.hasSecret() ? AUTH_FLAG_SECRET : 0);
		buf.writeBytes(auth.nonce());
		buf.writeInt(auth.maxFrameLength());
		buf.writeInt(endpoint.length);
		buf.writeBytes(endpoint);
		buf.writeInt(address.length);
		buf.writeBytes(address);
		return buf;
	}

	/**
	 * @param alloc where the buffer comes from
	 * @param proof the {@value SharedSecret#PROOF_LENGTH}-byte proof
	 * @return the {@code AUTH_PROOF} frame; the caller owns the buffer
	 */
	public static ByteBuf encodeAuthProof(ByteBufAllocator alloc, byte[] proof) {
		if (proof.length != AUTH_PROOF_BODY_LENGTH) {
			throw new IllegalArgumentException("proof : " + proof.length + " bytes (expected: "
					+ AUTH_PROOF_BODY_LENGTH + ")");
		}
		int size = FRAME_PREFIX_LENGTH + AUTH_PROOF_BODY_LENGTH;
		ByteBuf buf = alloc.buffer(size, size);
		buf.writeInt(1 + AUTH_PROOF_BODY_LENGTH);
		buf.writeByte(TYPE_AUTH_PROOF);
		buf.writeBytes(proof);
		return buf;
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
		Reader r = new Reader(body, "AUTH");
		int flags = r.u8("flags");
		if ((flags & ~AUTH_FLAG_SECRET) != 0) {
			throw r.malformed(String.format("flags : 0x%02x (expected: 0x00 or 0x%02x)", flags, AUTH_FLAG_SECRET));
		}
		byte[] nonce = r.bytes("nonce", SharedSecret.NONCE_LENGTH);
		int maxFrameLength = r.i32("maxFrameLength");
		if (maxFrameLength < TransportSettings.MIN_FRAME_LENGTH || maxFrameLength > TransportSettings.MAX_FRAME_LENGTH) {
			throw r.malformed("maxFrameLength : " + maxFrameLength + " (expected: " + TransportSettings.MIN_FRAME_LENGTH
					+ ".." + TransportSettings.MAX_FRAME_LENGTH + ")");
		}
		String endpoint = r.endpointField("endpoint", false);
		String address = r.endpointField("address", true);
		r.end();
		return new Auth(flags == AUTH_FLAG_SECRET, nonce, maxFrameLength, new DialledEndpoint(endpoint, address));
	}

	/**
	 * Decodes an {@code AUTH_PROOF} body.
	 *
	 * @param body exactly the frame's body; read, not released
	 * @return the proof
	 * @throws ProtocolException when the body has another length
	 */
	public static byte[] decodeAuthProof(ByteBuf body) {
		Reader r = new Reader(body, "AUTH_PROOF");
		byte[] proof = r.bytes("proof", AUTH_PROOF_BODY_LENGTH);
		r.end();
		return proof;
	}

	/**
	 * Encodes the prefix and header of a data frame; the {@code header.payloadLength()} payload bytes must follow.
	 *
	 * @return 42 bytes: length, type and the 37-byte header; the caller owns the buffer
	 */
	public static ByteBuf encodeDataHeader(ByteBufAllocator alloc, DataHeader header) {
		int size = FRAME_PREFIX_LENGTH + DATA_HEADER_LENGTH;
		ByteBuf buf = alloc.directBuffer(size, size);
		buf.writeInt(Math.toIntExact(1 + DATA_HEADER_LENGTH + header.payloadLength()));
		buf.writeByte(TYPE_DATA);
		return writeDataHeader(buf, header);
	}

	/**
	 * Writes the 37 header bytes of a data frame, as {@link #decodeDataHeader} reads them.
	 *
	 * @return {@code buf}
	 */
	public static ByteBuf writeDataHeader(ByteBuf buf, DataHeader header) {
		buf.writeLong(header.room());
		buf.writeByte(header.kind().ordinal());
		buf.writeInt(header.region());
		buf.writeLong(header.dstOffset());
		buf.writeInt(header.chunkLen());
		buf.writeLong(header.dstStride());
		buf.writeInt(header.count());
		return buf;
	}

	/**
	 * Encodes a control message as one frame.
	 *
	 * @param alloc where the buffer comes from
	 * @param message the message
	 * @param maxFrameLength the largest body the peer accepts
	 * @return the frame; the caller owns the buffer
	 * @throws KVFerryException when the body would exceed {@code maxFrameLength} (nothing is allocated then)
	 */
	public static ByteBuf encode(ByteBufAllocator alloc, KVMessage message, int maxFrameLength) {
		long body = bodyLength(message);
		if (body > maxFrameLength) {
			throw new KVFerryException("cannot send " + message.getClass().getSimpleName() + ": body of " + body
					+ " bytes exceeds maxFrameLength " + maxFrameLength);
		}
		int size = FRAME_PREFIX_LENGTH + (int) body;
		ByteBuf buf = alloc.buffer(size, size);
		try {
			buf.writeInt(1 + (int) body);
			writeBody(buf, message);
		}
		catch (RuntimeException e) {
			buf.release();
			throw e;
		}
		return buf;
	}

	private static long bodyLength(KVMessage message) {
		if (message instanceof KVMessage.Hello h) {
			return 4 + layoutLength(h.layout()) + 1 + 4;
		}
		if (message instanceof KVMessage.HelloAck a) {
			return layoutLength(a.layout()) + 8;
		}
		if (message instanceof KVMessage.Join) {
			return 8 + 4;
		}
		if (message instanceof KVMessage.Joined) {
			return 4;
		}
		if (message instanceof KVMessage.Fence) {
			return 8 + 8 + 8;
		}
		if (message instanceof KVMessage.Reject r) {
			return stringLength(r.reason());
		}
		if (message instanceof KVMessage.TransferRequest t) {
			return 8 + 4 + 4L * t.dstPages().length + 4 + 4 + 4L * t.stateIndices().length + 4 + 1
					+ stringLength(t.traceContext()) + 4 + 4 + 4L * t.stateCounts().length;
		}
		if (message instanceof KVMessage.Status s) {
			return 8 + 1 + 4 + stringLength(s.reason()) + 8 + 8;
		}
		if (message instanceof KVMessage.Abort a) {
			return 8 + stringLength(a.reason());
		}
		if (message instanceof KVMessage.Draining d) {
			return stringLength(d.reason());
		}
		return 8;
	}

	private static long layoutLength(PeerLayout l) {
		return 4 + PARALLEL_LENGTH + 4 + 1 + stringLength(l.dtype()) + 4 + 4 + 4 + 4 + regionsLength(l.kv())
				+ regionsLength(l.aux()) + regionsLength(l.state()) + 8 + 4 + 4L * l.stateKinds().size() + 4
				+ 4L * l.stateTpDims().size() + 2;
	}

	private static long regionsLength(List<RegionLayout> regions) {
		return 4 + (long) REGION_LENGTH * regions.size();
	}

	private static long stringLength(String s) {
		return 4 + (long) ByteBufUtil.utf8Bytes(s);
	}

	private static void writeBody(ByteBuf buf, KVMessage message) {
		if (message instanceof KVMessage.Hello h) {
			buf.writeByte(TYPE_HELLO);
			buf.writeInt(h.protocolVersion());
			writeLayout(buf, h.layout());
			buf.writeBoolean(h.checksums());
			buf.writeInt(h.stripes());
		}
		else if (message instanceof KVMessage.HelloAck a) {
			buf.writeByte(TYPE_HELLO_ACK);
			writeLayout(buf, a.layout());
			buf.writeLong(a.token());
		}
		else if (message instanceof KVMessage.Join j) {
			buf.writeByte(TYPE_JOIN);
			buf.writeLong(j.token());
			buf.writeInt(j.stripe());
		}
		else if (message instanceof KVMessage.Joined j) {
			buf.writeByte(TYPE_JOINED);
			buf.writeInt(j.stripe());
		}
		else if (message instanceof KVMessage.Fence f) {
			buf.writeByte(TYPE_FENCE);
			buf.writeLong(f.room());
			buf.writeLong(f.bytes());
			buf.writeLong(f.checksum());
		}
		else if (message instanceof KVMessage.Reject r) {
			buf.writeByte(TYPE_REJECT);
			writeString(buf, r.reason());
		}
		else if (message instanceof KVMessage.TransferRequest t) {
			buf.writeByte(TYPE_TRANSFER_REQUEST);
			buf.writeLong(t.room());
			writeInts(buf, t.dstPages());
			buf.writeInt(t.auxIndex());
			writeInts(buf, t.stateIndices());
			buf.writeInt(t.requiredDstInfoNum());
			buf.writeBoolean(t.dummy());
			writeString(buf, t.traceContext());
			buf.writeInt(t.decodePrefixLen());
			writeInts(buf, t.stateCounts());
		}
		else if (message instanceof KVMessage.Status s) {
			buf.writeByte(TYPE_STATUS);
			buf.writeLong(s.room());
			buf.writeByte(s.status().code());
			buf.writeInt(s.prefillRank());
			writeString(buf, s.reason());
			buf.writeLong(s.bytes());
			buf.writeLong(s.checksum());
		}
		else if (message instanceof KVMessage.Abort a) {
			buf.writeByte(TYPE_ABORT);
			buf.writeLong(a.room());
			writeString(buf, a.reason());
		}
		else if (message instanceof KVMessage.Draining d) {
			buf.writeByte(TYPE_DRAINING);
			writeString(buf, d.reason());
		}
		else {
			KVMessage.AbortAck a = (KVMessage.AbortAck) message;
			buf.writeByte(TYPE_ABORT_ACK);
			buf.writeLong(a.room());
		}
	}

	private static void writeLayout(ByteBuf buf, PeerLayout l) {
		buf.writeInt(l.engineRank());
		ParallelLayout p = l.parallel();
		buf.writeInt(p.attnTpSize());
		buf.writeInt(p.attnTpRank());
		buf.writeInt(p.attnDpSize());
		buf.writeInt(p.attnDpRank());
		buf.writeInt(p.systemDpSize());
		buf.writeInt(p.systemDpRank());
		buf.writeInt(p.ppSize());
		buf.writeInt(p.ppRank());
		buf.writeInt(l.pageSize());
		buf.writeBoolean(l.mla());
		writeString(buf, l.dtype());
		buf.writeInt(l.kvHeadNum());
		buf.writeInt(l.totalKvHeadNum());
		buf.writeInt(l.startLayer());
		buf.writeInt(l.draftLayers());
		writeRegions(buf, l.kv());
		writeRegions(buf, l.aux());
		writeRegions(buf, l.state());
		buf.writeInt(p.attnCpSize());
		buf.writeInt(p.attnCpRank());
		writeInts(buf, l.stateKinds().stream().mapToInt(Enum::ordinal).toArray());
		writeInts(buf, l.stateTpDims().stream().mapToInt(Integer::intValue).toArray());
		buf.writeBoolean(l.allCpRanksTransfer());
		buf.writeBoolean(l.dsaCacheLayerSplit());
	}

	private static void writeString(ByteBuf buf, String s) {
		// Reserving exactly utf8Bytes keeps the exact-capacity frame buffer from growing (writeUtf8 reserves 3 x).
		int length = ByteBufUtil.utf8Bytes(s);
		buf.writeInt(length);
		ByteBufUtil.reserveAndWriteUtf8(buf, s, length);
	}

	private static void writeInts(ByteBuf buf, int[] values) {
		buf.writeInt(values.length);
		int bytes = 4 * values.length;
		buf.ensureWritable(bytes);
		if (buf.nioBufferCount() == 1) {
			// A page list can hold millions of entries: one bulk copy instead of a bounds-checked call per entry.
			buf.nioBuffer(buf.writerIndex(), bytes).asIntBuffer().put(values);
			buf.writerIndex(buf.writerIndex() + bytes);
			return;
		}
		for (int v : values) {
			buf.writeInt(v);
		}
	}

	private static void writeRegions(ByteBuf buf, List<RegionLayout> regions) {
		buf.writeInt(regions.size());
		for (RegionLayout r : regions) {
			buf.writeInt(r.itemLen());
			buf.writeLong(r.itemCount());
		}
	}

	/**
	 * Decodes a control message body.
	 *
	 * @param type the frame's type, one of the control types
	 * @param body exactly the frame's body; read (its reader index advances), not released
	 * @return the message
	 * @throws ProtocolException when the body is malformed
	 */
	public static KVMessage decode(int type, ByteBuf body) {
		Reader r = new Reader(body, typeName(type));
		try {
			KVMessage message = decodeBody(type, r);
			r.end();
			return message;
		}
		catch (IllegalArgumentException | NullPointerException e) {
			throw r.malformed(e.getMessage());
		}
	}

	private static KVMessage decodeBody(int type, Reader r) {
		switch (type) {
			case TYPE_HELLO: {
				int version = r.i32("protocolVersion");
				PeerLayout layout = readLayout(r);
				boolean checksums = r.bool("checksums");
				return new KVMessage.Hello(version, layout, checksums, r.i32("stripes"));
			}
			case TYPE_HELLO_ACK: {
				PeerLayout layout = readLayout(r);
				return new KVMessage.HelloAck(layout, r.i64("token"));
			}
			case TYPE_JOIN: {
				long token = r.i64("token");
				return new KVMessage.Join(token, r.i32("stripe"));
			}
			case TYPE_JOINED:
				return new KVMessage.Joined(r.i32("stripe"));
			case TYPE_FENCE: {
				long room = r.i64("room");
				long bytes = r.i64("bytes");
				return new KVMessage.Fence(room, bytes, r.i64("checksum"));
			}
			case TYPE_REJECT:
				return new KVMessage.Reject(r.string("reason"));
			case TYPE_TRANSFER_REQUEST: {
				long room = r.i64("room");
				int[] dstPages = r.ints("dstPages");
				int auxIndex = r.i32("auxIndex");
				int[] stateIndices = r.ints("stateIndices");
				int required = r.i32("requiredDstInfoNum");
				boolean dummy = r.bool("dummy");
				String traceContext = r.string("traceContext");
				int prefix = r.i32("decodePrefixLen");
				return new KVMessage.TransferRequest(room, dstPages, auxIndex, stateIndices, required, dummy,
						traceContext, prefix, r.ints("stateCounts"));
			}
			case TYPE_STATUS: {
				long room = r.i64("room");
				KVPoll status = KVPoll.fromCode(r.u8("status"));
				int rank = r.i32("prefillRank");
				String reason = r.string("reason");
				long bytes = r.i64("bytes");
				return new KVMessage.Status(room, status, rank, reason, bytes, r.i64("checksum"));
			}
			case TYPE_ABORT: {
				long room = r.i64("room");
				return new KVMessage.Abort(room, r.string("reason"));
			}
			case TYPE_ABORT_ACK:
				return new KVMessage.AbortAck(r.i64("room"));
			case TYPE_DRAINING:
				return new KVMessage.Draining(r.string("reason"));
			default:
				throw new ProtocolException("unknown frame type " + typeName(type));
		}
	}

	private static PeerLayout readLayout(Reader r) {
		int engineRank = r.i32("engineRank");
		r.need(PARALLEL_LENGTH, "parallel");
		int[] sizes = { r.i32("attnTpSize"), r.i32("attnTpRank"), r.i32("attnDpSize"), r.i32("attnDpRank"),
				r.i32("systemDpSize"), r.i32("systemDpRank"), r.i32("ppSize"), r.i32("ppRank") };
		int pageSize = r.i32("pageSize");
		boolean mla = r.bool("mla");
		String dtype = r.string("dtype");
		int kvHeadNum = r.i32("kvHeadNum");
		int totalKvHeadNum = r.i32("totalKvHeadNum");
		int startLayer = r.i32("startLayer");
		int draftLayers = r.i32("draftLayers");
		List<RegionLayout> kv = r.regions("kv");
		List<RegionLayout> aux = r.regions("aux");
		List<RegionLayout> state = r.regions("state");
		ParallelLayout parallel = new ParallelLayout(sizes[0], sizes[1], sizes[2], sizes[3], sizes[4], sizes[5],
				sizes[6], sizes[7], r.i32("attnCpSize"), r.i32("attnCpRank"));
		List<StateKind> kinds = new ArrayList<>();
		for (int k : r.ints("stateKinds")) {
			if (k < 0 || k >= StateKind.values().length) {
				throw r.malformed("stateKinds : " + k + " (expected: 0.." + (StateKind.values().length - 1) + ")");
			}
			kinds.add(StateKind.values()[k]);
		}
		List<Integer> dims = Arrays.stream(r.ints("stateTpDims")).boxed().toList();
		boolean allCp = r.bool("allCpRanksTransfer");
		return new PeerLayout(engineRank, parallel, pageSize, mla, dtype, kvHeadNum, totalKvHeadNum, startLayer,
				draftLayers, kv, aux, state, kinds, dims, allCp, r.bool("dsaCacheLayerSplit"));
	}

	/**
	 * Decodes the 37-byte header of a data frame.
	 *
	 * @param buf at least {@link #DATA_HEADER_LENGTH} readable bytes; the reader index advances past the header
	 * @return the header
	 * @throws ProtocolException when a field is out of range
	 */
	public static DataHeader decodeDataHeader(ByteBuf buf) {
		Reader r = new Reader(buf, "DATA");
		r.need(DATA_HEADER_LENGTH, "header");
		long room = buf.readLong();
		int kind = buf.readUnsignedByte();
		int region = buf.readInt();
		long dstOffset = buf.readLong();
		int chunkLen = buf.readInt();
		long dstStride = buf.readLong();
		int count = buf.readInt();
		if (kind > RegionKind.STATE.ordinal()) {
			throw r.malformed("kind : " + kind + " (expected: 0.." + RegionKind.STATE.ordinal() + ")");
		}
		if (region < 0 || dstOffset < 0 || chunkLen < 0 || dstStride < 0 || count < 0) {
			throw r.malformed("region=" + region + " dstOffset=" + dstOffset + " chunkLen=" + chunkLen + " dstStride="
					+ dstStride + " count=" + count + " (expected: all >= 0)");
		}
		return new DataHeader(room, RegionKind.fromOrdinal(kind), region, dstOffset, chunkLen, dstStride, count);
	}

	/**
	 * The body of an {@code AUTH} frame.
	 *
	 * @param hasSecret whether the sender has a shared secret (and will send a proof)
	 * @param nonce the sender's {@value SharedSecret#NONCE_LENGTH}-byte nonce
	 * @param maxFrameLength the largest control body and data payload the sender accepts
	 * @param dialled what the sender dialled, when it is the connecting side; {@link DialledEndpoint#NONE} from the
	 *        accepting side
	 */
	public record Auth(boolean hasSecret, byte[] nonce, int maxFrameLength, DialledEndpoint dialled) {

		public Auth {
			Objects.requireNonNull(nonce, "nonce");
			Objects.requireNonNull(dialled, "dialled");
			if (nonce.length != SharedSecret.NONCE_LENGTH) {
				throw new IllegalArgumentException("nonce : " + nonce.length + " bytes (expected: "
						+ SharedSecret.NONCE_LENGTH + ")");
			}
		}

		/** The accepting side's body: it dialled nothing. */
		public Auth(boolean hasSecret, byte[] nonce, int maxFrameLength) {
			this(hasSecret, nonce, maxFrameLength, DialledEndpoint.NONE);
		}

		@Override
		public boolean equals(Object o) {
			return o instanceof Auth a && a.hasSecret == hasSecret && Arrays.equals(a.nonce, nonce)
					&& a.maxFrameLength == maxFrameLength && a.dialled.equals(dialled);
		}

		@Override
		public int hashCode() {
			return 31 * (31 * (31 * Boolean.hashCode(hasSecret) + Arrays.hashCode(nonce)) + maxFrameLength)
					+ dialled.hashCode();
		}

		@Override
		public String toString() {
			return "Auth[hasSecret=" + hasSecret + ", maxFrameLength=" + maxFrameLength + ", dialled=" + dialled + "]";
		}
	}

	/** Bounds-checked reads of one frame body; every failure names the frame and the field. */
	private static final class Reader {

		private final ByteBuf buf;
		private final String frame;

		Reader(ByteBuf buf, String frame) {
			this.buf = buf;
			this.frame = frame;
		}

		ProtocolException malformed(String detail) {
			return new ProtocolException("malformed " + frame + " frame: " + detail);
		}

		void need(int bytes, String field) {
			if (buf.readableBytes() < bytes) {
				throw malformed(field + " needs " + bytes + " bytes but " + buf.readableBytes()
						+ " remain (truncated body)");
			}
		}

		int i32(String field) {
			need(4, field);
			return buf.readInt();
		}

		long i64(String field) {
			need(8, field);
			return buf.readLong();
		}

		int u8(String field) {
			need(1, field);
			return buf.readUnsignedByte();
		}

		boolean bool(String field) {
			int v = u8(field);
			if (v > 1) {
				throw malformed(field + " : " + v + " (expected: 0 or 1)");
			}
			return v == 1;
		}

		/** Reads a count and checks that {@code count × elementLength} bytes remain, before anything is allocated. */
		int count(String label, int elementLength) {
			int n = i32(label);
			long max = buf.readableBytes() / elementLength;
			if (n < 0 || n > max) {
				throw malformed(label + " : " + n + " (expected: 0.." + max + ")");
			}
			return n;
		}

		String string(String field) {
			int n = count(field + " length", 1);
			String s = buf.toString(buf.readerIndex(), n, StandardCharsets.UTF_8);
			buf.skipBytes(n);
			return s;
		}

		int[] ints(String field) {
			int n = count(field + " count", 4);
			int[] values = new int[n];
			buf.nioBuffer(buf.readerIndex(), 4 * n).asIntBuffer().get(values);
			buf.skipBytes(4 * n);
			return values;
		}

		List<RegionLayout> regions(String field) {
			int n = count(field + " count", REGION_LENGTH);
			List<RegionLayout> regions = new ArrayList<>(n);
			for (int i = 0; i < n; i++) {
				regions.add(new RegionLayout(buf.readInt(), buf.readLong()));
			}
			return regions;
		}

		byte[] bytes(String field, int length) {
			need(length, field);
			byte[] b = new byte[length];
			buf.readBytes(b);
			return b;
		}

		/** Reads a string of a dialled endpoint: bounded before anything is copied, then checked as text. */
		String endpointField(String field, boolean ipLiteral) {
			int n = count(field + " length", 1);
			if (n > DialledEndpoint.MAX_LENGTH) {
				throw malformed(field + " length : " + n + " (expected: 0.." + DialledEndpoint.MAX_LENGTH + ")");
			}
			String s = buf.toString(buf.readerIndex(), n, StandardCharsets.UTF_8);
			buf.skipBytes(n);
			String problem = DialledEndpoint.problem(s, ipLiteral);
			if (problem != null) {
				throw malformed(problem);
			}
			return s;
		}

		void end() {
			if (buf.isReadable()) {
				throw malformed(buf.readableBytes() + " trailing bytes after the last field");
			}
		}
	}
}
