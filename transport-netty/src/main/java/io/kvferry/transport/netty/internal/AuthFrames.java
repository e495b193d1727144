package io.kvferry.transport.netty.internal;

import java.nio.charset.StandardCharsets;

import io.kvferry.transport.netty.internal.frame.FrameReader;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;

/**
 * The two handshake frames, {@code AUTH} and {@code AUTH_PROOF}: they come before any control frame, carry no
 * {@link io.kvferry.spi.KVMessage} and have their own length bounds, so they stay out of the control-frame table.
 */
final class AuthFrames {

	private AuthFrames() {
	}

	/** @return whether {@code type} is a handshake frame type ({@code AUTH} or {@code AUTH_PROOF}) */
	static boolean isAuthType(int type) {
		return type == KVFrameCodec.TYPE_AUTH || type == KVFrameCodec.TYPE_AUTH_PROOF;
	}

	/** @return the fewest body bytes of a handshake frame type */
	static int authMinBodyLength(int type) {
		return type == KVFrameCodec.TYPE_AUTH ? KVFrameCodec.AUTH_MIN_BODY_LENGTH : KVFrameCodec.AUTH_PROOF_BODY_LENGTH;
	}

	/** @return the most body bytes of a handshake frame type */
	static int authMaxBodyLength(int type) {
		return type == KVFrameCodec.TYPE_AUTH ? KVFrameCodec.AUTH_MAX_BODY_LENGTH : KVFrameCodec.AUTH_PROOF_BODY_LENGTH;
	}

	static ByteBuf encodeAuth(ByteBufAllocator alloc, KVFrameCodec.Auth auth) {
		// The same bytes the proofs cover (SharedSecret hashes String.getBytes too).
		byte[] endpoint = auth.dialled().endpoint().getBytes(StandardCharsets.UTF_8);
		byte[] address = auth.dialled().address().getBytes(StandardCharsets.UTF_8);
		int body = KVFrameCodec.AUTH_MIN_BODY_LENGTH + endpoint.length + address.length;
		int size = KVFrameCodec.FRAME_PREFIX_LENGTH + body;
		ByteBuf buf = alloc.buffer(size, size);
		buf.writeInt(1 + body);
		buf.writeByte(KVFrameCodec.TYPE_AUTH);
		buf.writeByte(auth.hasSecret() ? KVFrameCodec.AUTH_FLAG_SECRET : 0);
		buf.writeBytes(auth.nonce());
		buf.writeInt(auth.maxFrameLength());
		buf.writeInt(auth.heartbeatMillis());
		buf.writeInt(endpoint.length);
		buf.writeBytes(endpoint);
		buf.writeInt(address.length);
		buf.writeBytes(address);
		return buf;
	}

	static ByteBuf encodeAuthProof(ByteBufAllocator alloc, byte[] proof) {
		if (proof.length != KVFrameCodec.AUTH_PROOF_BODY_LENGTH) {
			throw new IllegalArgumentException("proof : " + proof.length + " bytes (expected: "
					+ KVFrameCodec.AUTH_PROOF_BODY_LENGTH + ")");
		}
		int size = KVFrameCodec.FRAME_PREFIX_LENGTH + KVFrameCodec.AUTH_PROOF_BODY_LENGTH;
		ByteBuf buf = alloc.buffer(size, size);
		buf.writeInt(1 + KVFrameCodec.AUTH_PROOF_BODY_LENGTH);
		buf.writeByte(KVFrameCodec.TYPE_AUTH_PROOF);
		buf.writeBytes(proof);
		return buf;
	}

	static KVFrameCodec.Auth decodeAuth(ByteBuf body) {
		FrameReader r = new FrameReader(body, "AUTH");
		int flags = r.u8("flags");
		if ((flags & ~KVFrameCodec.AUTH_FLAG_SECRET) != 0) {
			throw r.malformed(String.format("flags : 0x%02x (expected: 0x00 or 0x%02x)", flags,
					KVFrameCodec.AUTH_FLAG_SECRET));
		}
		byte[] nonce = r.bytes("nonce", SharedSecret.NONCE_LENGTH);
		int maxFrameLength = r.i32("maxFrameLength");
		if (maxFrameLength < TransportSettings.MIN_FRAME_LENGTH || maxFrameLength > TransportSettings.MAX_FRAME_LENGTH) {
			throw r.malformed("maxFrameLength : " + maxFrameLength + " (expected: " + TransportSettings.MIN_FRAME_LENGTH
					+ ".." + TransportSettings.MAX_FRAME_LENGTH + ")");
		}
		int heartbeatMillis = r.i32("heartbeatMillis");
		if (heartbeatMillis < TransportSettings.MIN_HEARTBEAT_INTERVAL.toMillis()
				|| heartbeatMillis > TransportSettings.MAX_HEARTBEAT_INTERVAL.toMillis()) {
			throw r.malformed("heartbeatMillis : " + heartbeatMillis + " (expected: "
					+ TransportSettings.MIN_HEARTBEAT_INTERVAL.toMillis() + ".."
					+ TransportSettings.MAX_HEARTBEAT_INTERVAL.toMillis() + ")");
		}
		String endpoint = endpointField(r, "endpoint", false);
		String address = endpointField(r, "address", true);
		r.end();
		return new KVFrameCodec.Auth(flags == KVFrameCodec.AUTH_FLAG_SECRET, nonce, maxFrameLength, heartbeatMillis,
				new DialledEndpoint(endpoint, address));
	}

	static byte[] decodeAuthProof(ByteBuf body) {
		FrameReader r = new FrameReader(body, "AUTH_PROOF");
		byte[] proof = r.bytes("proof", KVFrameCodec.AUTH_PROOF_BODY_LENGTH);
		r.end();
		return proof;
	}

	/** Reads a string of a dialled endpoint: bounded before anything is copied, then checked as text. */
	private static String endpointField(FrameReader r, String field, boolean ipLiteral) {
		int n = r.count(field + " length", 1);
		if (n > DialledEndpoint.MAX_LENGTH) {
			throw r.malformed(field + " length : " + n + " (expected: 0.." + DialledEndpoint.MAX_LENGTH + ")");
		}
		String s = r.utf8(n);
		String problem = DialledEndpoint.problem(s, ipLiteral);
		if (problem != null) {
			throw r.malformed(problem);
		}
		return s;
	}
}
