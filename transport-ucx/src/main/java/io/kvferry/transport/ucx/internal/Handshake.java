package io.kvferry.transport.ucx.internal;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UTFDataFormatException;
import java.io.UncheckedIOException;

import io.kvferry.ProtocolException;
import io.kvferry.spi.HandshakeSecret;
import io.kvferry.spi.KVMessage;
import io.kvferry.transport.ucx.UcxDataPath;

/**
 * What two UCX transports tell each other before their first active message, over a short-lived TCP connection to the
 * listener's address: who they are (the UCX worker address each side's endpoint connects to, the id the other side
 * must put in its messages), what they can do (the UCX transports each allows, the host each runs on, whether it has
 * an RDMA device, which data path it wants), and, from the listening (prefill) side, the data path chosen. No remote
 * key crosses here: prefill announces a region's key on the UCX connection itself, before the first read of it, and
 * only to a connection that reads one-sided. Decode never sends a key: nothing of its memory is open to the peer.
 *
 * <p>With a shared secret ({@link HandshakeSecret}), decode's hello carries its nonce and the address its socket
 * reached; prefill answers with a challenge (its own nonce, and nothing else), decode proves the secret over both
 * nonces and its hello, and only then does prefill answer its hello, with a proof over both hellos. So a peer without
 * the secret learns neither prefill's worker address nor a connection id, and gets no key; a relay that rewrites a
 * hello breaks both proofs, and one that forwards them unchanged is refused because decode's socket reached the relay,
 * not the listener.
 *
 * <pre>
 * magic "KVFU", u16 handshake version, i32 message-set version ({@link KVMessage#PROTOCOL_VERSION}), u8 step, then:
 *   0 hello      i64 connection id, bytes worker address, string tls, string host, bool rdma device, u8 data path,
 *                i32 heartbeat interval in ms (10..600,000), bytes nonce (0 or 32), string reached (decode: the ip:port its socket reached; prefill: empty),
 *                bytes proof (0 or 32)
 *   1 refused    string reason (the peer's connect fails with it; nothing follows)
 *   2 challenge  bytes nonce (32)
 *   3 proof      bytes proof (32)
 * </pre>
 *
 * A {@code string} is Java's modified UTF-8 with a 2-byte length; {@code bytes} a 4-byte length and the bytes. Every
 * length is bounded before anything is allocated. A proof covers the hello's fields before its own ({@link #body}).
 *
 * @param connection the id the receiver puts in each active message it sends to the sender of this hello
 * @param workerAddress the sender's UCX worker address
 * @param tls the UCX transports the sender allows ({@code UCX_TLS}; empty: UCX's default)
 * @param host the sender's host identity (the kernel's boot id), empty when unknown
 * @param rdmaDevice whether the sender has an RDMA device (InfiniBand, RoCE)
 * @param dataPath the sender's wish (from decode), or the path chosen (from prefill)
 * @param heartbeatMillis the sender's heartbeat interval: it sends something at least once per interval, and the
 *        receiver judges it silent after two of them ({@value #MIN_HEARTBEAT_MILLIS}..{@value #MAX_HEARTBEAT_MILLIS})
 * @param nonce decode's nonce when it proves a shared secret, else empty
 * @param reached the address decode's handshake socket reached ({@code ip:port}), empty from prefill
 * @param proof prefill's proof over both hellos when a secret is proved, else empty
 */
record Handshake(long connection, byte[] workerAddress, String tls, String host, boolean rdmaDevice,
		UcxDataPath dataPath, int heartbeatMillis, byte[] nonce, String reached, byte[] proof) implements HandshakeStep {

	static final int MAGIC = 0x4b564655;
	static final int VERSION = 2;
	/** Names this handshake in every proof, so that no proof of another transport's handshake verifies here. */
	static final String LABEL = "kvferry-ucx-auth-v1";
	/** The prover's role byte: the side that connected. */
	static final byte CONNECTING = 'C';
	/** The prover's role byte: the side that listened. */
	static final byte ACCEPTING = 'A';
	/** Bounds of a peer's heartbeat interval, as the TCP transport's: 10 ms to 10 minutes. */
	static final int MIN_HEARTBEAT_MILLIS = 10;
	static final int MAX_HEARTBEAT_MILLIS = 600_000;
	private static final int MAX_ADDRESS = 1 << 16;
	private static final int HELLO = 0;
	private static final int REFUSED = 1;
	private static final int CHALLENGE = 2;
	private static final int PROOF = 3;

	/** @return this hello with {@code proof} */
	Handshake withProof(byte[] proof) {
		return new Handshake(connection, workerAddress, tls, host, rdmaDevice, dataPath, heartbeatMillis, nonce, reached,
				proof);
	}

	/** @return this hello with another data path */
	Handshake withDataPath(UcxDataPath path) {
		return new Handshake(connection, workerAddress, tls, host, rdmaDevice, path, heartbeatMillis, nonce, reached,
				proof);
	}

	/** @return the hello's fields before the proof, as they cross the wire: what the proofs cover */
	byte[] body() {
		ByteArrayOutputStream bytes = new ByteArrayOutputStream(128 + workerAddress.length);
		DataOutputStream out = new DataOutputStream(bytes);
		try {
			out.writeLong(connection);
			out.writeInt(workerAddress.length);
			out.write(workerAddress);
			out.writeUTF(tls);
			out.writeUTF(host);
			out.writeBoolean(rdmaDevice);
			out.writeByte(dataPath.ordinal());
			out.writeInt(heartbeatMillis);
			out.writeInt(nonce.length);
			out.write(nonce);
			out.writeUTF(reached);
		}
		catch (IOException e) {
			throw new UncheckedIOException(e);
		}
		return bytes.toByteArray();
	}

	void write(OutputStream stream) throws IOException {
		DataOutputStream out = start(stream, HELLO);
		out.write(body());
		out.writeInt(proof.length);
		out.write(proof);
		out.flush();
	}

	/** Writes a refusal: the peer's connect fails with {@code reason}. */
	static void refuse(OutputStream stream, String reason) throws IOException {
		DataOutputStream out = start(stream, REFUSED);
		out.writeUTF(reason.length() > 1000 ? reason.substring(0, 1000) : reason);
		out.flush();
	}

	/** Writes the listener's challenge. */
	static void challenge(OutputStream stream, byte[] nonce) throws IOException {
		DataOutputStream out = start(stream, CHALLENGE);
		out.writeInt(nonce.length);
		out.write(nonce);
		out.flush();
	}

	/** Writes the connecting side's proof. */
	static void prove(OutputStream stream, byte[] proof) throws IOException {
		DataOutputStream out = start(stream, PROOF);
		out.writeInt(proof.length);
		out.write(proof);
		out.flush();
	}

	private static DataOutputStream start(OutputStream stream, int step) throws IOException {
		DataOutputStream out = new DataOutputStream(stream);
		out.writeInt(MAGIC);
		out.writeShort(VERSION);
		out.writeInt(KVMessage.PROTOCOL_VERSION);
		out.writeByte(step);
		return out;
	}

	/**
	 * Reads the peer's next step: a hello, a challenge or a proof.
	 *
	 * @param peer names the peer in reasons
	 * @throws ProtocolException when the bytes are not a step of this release, or the peer refused
	 */
	static HandshakeStep read(InputStream stream, String peer) throws IOException {
		DataInputStream in = new DataInputStream(stream);
		try {
			int magic = in.readInt();
			if (magic != MAGIC) {
				throw failed(peer, "not a kvferry UCX peer (starts with 0x" + Integer.toHexString(magic)
						+ ", expected 0x" + Integer.toHexString(MAGIC) + ")");
			}
			int version = in.readUnsignedShort();
			int messages = in.readInt();
			if (version != VERSION || messages != KVMessage.PROTOCOL_VERSION) {
				throw failed(peer, "it runs handshake " + version + " and messages " + messages + " (expected: "
						+ VERSION + " and " + KVMessage.PROTOCOL_VERSION + "); run the same kvferry release on both "
						+ "sides");
			}
			int step = in.readUnsignedByte();
			return switch (step) {
				case HELLO -> hello(in, peer);
				case REFUSED -> throw new ProtocolException("UCX handshake refused by " + peer + ": " + in.readUTF());
				case CHALLENGE -> new HandshakeStep.Challenge(bytes(in, HandshakeSecret.NONCE_LENGTH, HandshakeSecret.NONCE_LENGTH,
						"challenge nonce", peer));
				case PROOF -> new HandshakeStep.Proof(bytes(in, HandshakeSecret.PROOF_LENGTH, HandshakeSecret.PROOF_LENGTH, "proof",
						peer));
				default -> throw failed(peer, "step " + step + " (expected: 0..3)");
			};
		}
		catch (EOFException e) {
			throw failed(peer, "the connection closed before the handshake completed");
		}
		catch (UTFDataFormatException e) {
			throw failed(peer, "a text field is not modified UTF-8 (" + e.getMessage() + ")");
		}
	}

	private static Handshake hello(DataInputStream in, String peer) throws IOException {
		long connection = in.readLong();
		byte[] address = bytes(in, 0, MAX_ADDRESS, "worker address", peer);
		String tls = in.readUTF();
		String host = in.readUTF();
		boolean rdma = in.readBoolean();
		int path = in.readUnsignedByte();
		if (path >= UcxDataPath.values().length) {
			throw failed(peer, "data path " + path + " (expected: 0.." + (UcxDataPath.values().length - 1) + ")");
		}
		int heartbeat = in.readInt();
		if (heartbeat < MIN_HEARTBEAT_MILLIS || heartbeat > MAX_HEARTBEAT_MILLIS) {
			throw failed(peer, "heartbeat interval of " + heartbeat + " ms (expected: " + MIN_HEARTBEAT_MILLIS + ".."
					+ MAX_HEARTBEAT_MILLIS + ")");
		}
		byte[] nonce = optional(in, HandshakeSecret.NONCE_LENGTH, "nonce", peer);
		String reached = in.readUTF();
		byte[] proof = optional(in, HandshakeSecret.PROOF_LENGTH, "proof", peer);
		return new Handshake(connection, address, tls, host, rdma, UcxDataPath.values()[path], heartbeat, nonce,
				reached, proof);
	}

	/** Reads a field that is either absent (0 bytes) or exactly {@code length} bytes. */
	private static byte[] optional(DataInputStream in, int length, String what, String peer) throws IOException {
		int n = in.readInt();
		if (n != 0 && n != length) {
			throw failed(peer, what + " of " + n + " bytes (expected: 0 or " + length + ")");
		}
		byte[] b = new byte[n];
		in.readFully(b);
		return b;
	}

	private static byte[] bytes(DataInputStream in, int min, int max, String what, String peer) throws IOException {
		int n = in.readInt();
		if (n < min || n > max) {
			throw failed(peer, what + " of " + n + " bytes (expected: " + (min == max ? String.valueOf(min)
					: min + ".." + max) + ")");
		}
		byte[] b = new byte[n];
		in.readFully(b);
		return b;
	}

	private static ProtocolException failed(String peer, String why) {
		return new ProtocolException("UCX handshake with " + peer + " failed: " + why);
	}
}
