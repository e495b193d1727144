package io.kvferry.transport.ucx.internal;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.List;

import io.kvferry.ProtocolException;
import io.kvferry.spi.KVMessage;
import io.kvferry.transport.ucx.UcxDataPath;

/**
 * What two UCX transports tell each other before their first active message, over a short-lived TCP connection to the
 * listener's address: who they are (the UCX worker address each side's endpoint connects to, the id the other side
 * must put in its messages), what they can do (the UCX transports each allows, the host each runs on, whether it has
 * an RDMA device, which data path it wants), and, from the listening (prefill) side, the data path chosen and the
 * remote keys of its registered regions, so that decode can read their pages. Decode never sends a key: nothing
 * of its memory is open to the peer.
 *
 * <pre>
 * magic "KVFU", u16 handshake version, i32 message-set version ({@link KVMessage#PROTOCOL_VERSION}),
 * u8 status (0 hello, 1 refused: then a reason, and nothing else),
 * i64 connection id, bytes worker address, string tls, string host, bool rdma device, u8 data path,
 * i32 regions, per region: i64 base, i64 length, bytes packed remote key
 * </pre>
 *
 * A {@code string} is Java's modified UTF-8 with a 2-byte length; {@code bytes} a 4-byte length and the bytes. Every
 * length is bounded before anything is allocated.
 *
 * @param connection the id the receiver puts in each active message it sends to the sender of this hello
 * @param workerAddress the sender's UCX worker address
 * @param tls the UCX transports the sender allows ({@code UCX_TLS}; empty: UCX's default)
 * @param host the sender's host identity (the kernel's boot id), empty when unknown
 * @param rdmaDevice whether the sender has an RDMA device (InfiniBand, RoCE)
 * @param dataPath the sender's wish (from decode), or the path chosen (from prefill)
 * @param regions the sender's registered regions, with their keys (prefill only)
 */
record Handshake(long connection, byte[] workerAddress, String tls, String host, boolean rdmaDevice,
		UcxDataPath dataPath, List<Region> regions) {

	static final int MAGIC = 0x4b564655;
	static final int VERSION = 1;
	private static final int MAX_ADDRESS = 1 << 16;
	private static final int MAX_KEY = 1 << 16;
	private static final int MAX_REGIONS = 1 << 16;

	/** A registered region as its owner tells it: where it is and the packed key a peer reads it with. */
	record Region(long base, long length, byte[] key) {
	}

	void write(OutputStream stream) throws IOException {
		DataOutputStream out = new DataOutputStream(stream);
		out.writeInt(MAGIC);
		out.writeShort(VERSION);
		out.writeInt(KVMessage.PROTOCOL_VERSION);
		out.writeByte(0);
		out.writeLong(connection);
		out.writeInt(workerAddress.length);
		out.write(workerAddress);
		out.writeUTF(tls);
		out.writeUTF(host);
		out.writeBoolean(rdmaDevice);
		out.writeByte(dataPath.ordinal());
		out.writeInt(regions.size());
		for (Region r : regions) {
			out.writeLong(r.base);
			out.writeLong(r.length);
			out.writeInt(r.key.length);
			out.write(r.key);
		}
		out.flush();
	}

	/** Writes a refusal: the peer's connect fails with {@code reason}. */
	static void refuse(OutputStream stream, String reason) throws IOException {
		DataOutputStream out = new DataOutputStream(stream);
		out.writeInt(MAGIC);
		out.writeShort(VERSION);
		out.writeInt(KVMessage.PROTOCOL_VERSION);
		out.writeByte(1);
		out.writeUTF(reason.length() > 1000 ? reason.substring(0, 1000) : reason);
		out.flush();
	}

	/**
	 * Reads the peer's hello.
	 *
	 * @param peer names the peer in reasons
	 * @throws ProtocolException when the bytes are not a hello of this release, or the peer refused
	 */
	static Handshake read(InputStream stream, String peer) throws IOException {
		DataInputStream in = new DataInputStream(stream);
		try {
			int magic = in.readInt();
			if (magic != MAGIC) {
				throw new ProtocolException("UCX handshake with " + peer + " failed: not a kvferry UCX peer (starts "
						+ "with 0x" + Integer.toHexString(magic) + ", expected 0x" + Integer.toHexString(MAGIC) + ")");
			}
			int version = in.readUnsignedShort();
			int messages = in.readInt();
			if (version != VERSION || messages != KVMessage.PROTOCOL_VERSION) {
				throw new ProtocolException("UCX handshake with " + peer + " failed: it runs handshake " + version
						+ " and messages " + messages + " (expected: " + VERSION + " and " + KVMessage.PROTOCOL_VERSION
						+ "); run the same kvferry release on both sides");
			}
			int status = in.readUnsignedByte();
			if (status == 1) {
				throw new ProtocolException("UCX handshake refused by " + peer + ": " + in.readUTF());
			}
			if (status != 0) {
				throw new ProtocolException("UCX handshake with " + peer + " failed: status " + status);
			}
			long connection = in.readLong();
			byte[] address = bytes(in, MAX_ADDRESS, "worker address", peer);
			String tls = in.readUTF();
			String host = in.readUTF();
			boolean rdma = in.readBoolean();
			int path = in.readUnsignedByte();
			if (path >= UcxDataPath.values().length) {
				throw new ProtocolException("UCX handshake with " + peer + " failed: data path " + path);
			}
			int n = in.readInt();
			if (n < 0 || n > MAX_REGIONS) {
				throw new ProtocolException("UCX handshake with " + peer + " failed: " + n + " regions (expected: 0.."
						+ MAX_REGIONS + ")");
			}
			List<Region> regions = new ArrayList<>(Math.min(n, 1024));
			for (int i = 0; i < n; i++) {
				long base = in.readLong();
				long length = in.readLong();
				if (base == 0 || length <= 0 || base + length < base) {
					throw new ProtocolException("UCX handshake with " + peer + " failed: region " + i + " at 0x"
							+ Long.toHexString(base) + " of " + length + " bytes");
				}
				regions.add(new Region(base, length, bytes(in, MAX_KEY, "remote key", peer)));
			}
			return new Handshake(connection, address, tls, host, rdma, UcxDataPath.values()[path], regions);
		}
		catch (EOFException e) {
			throw new ProtocolException("UCX handshake with " + peer + " failed: the connection closed before the "
					+ "handshake completed");
		}
	}

	private static byte[] bytes(DataInputStream in, int max, String what, String peer) throws IOException {
		int n = in.readInt();
		if (n < 0 || n > max) {
			throw new ProtocolException("UCX handshake with " + peer + " failed: " + what + " of " + n + " bytes "
					+ "(expected: 0.." + max + ")");
		}
		byte[] b = new byte[n];
		in.readFully(b);
		return b;
	}
}
