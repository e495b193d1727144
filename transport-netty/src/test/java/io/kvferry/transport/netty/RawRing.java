package io.kvferry.transport.netty;

import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVMessage;
import io.kvferry.transport.netty.internal.KVFrameCodec;
import io.kvferry.transport.netty.internal.shm.Ring;
import io.kvferry.transport.netty.internal.shm.ShmConfig;
import io.netty.util.internal.PlatformDependent;

/**
 * A fake prefill rank speaking the wire protocol by hand on a blocking socket: it completes the handshake, maps the
 * ring decode offers, answers when a test says so, and then writes whatever DATA_SHM frame a test wants, forged ones
 * included.
 */
final class RawRing implements AutoCloseable {

	private final DataOutputStream out;
	private final Ring ring;

	private RawRing(DataOutputStream out, Ring ring) {
		this.out = out;
		this.ring = ring;
	}

	/** Completes the handshake, maps the offered ring and accepts it. */
	static RawRing accept(Socket socket, Path dir) throws IOException {
		RawRing raw = mapOffered(socket, dir);
		raw.reply(true);
		return raw;
	}

	/** Completes the handshake and maps the offered ring, without answering yet. */
	static RawRing mapOffered(Socket socket, Path dir) throws IOException {
		DataInputStream body = new DataInputStream(new ByteArrayInputStream(offerOf(socket)));
		body.readFully(new byte[body.readInt()]);
		byte[] path = new byte[body.readInt()];
		body.readFully(path);
		byte[] nonce = new byte[Ring.NONCE_BYTES];
		body.readFully(nonce);
		int slots = body.readInt();
		int slotSize = body.readInt();
		Ring ring = Ring.open(ShmConfig.of(SameHost.AUTO).withDirectory(dir), new String(path,
				StandardCharsets.UTF_8), nonce, slots, slotSize);
		return new RawRing(new DataOutputStream(socket.getOutputStream()), ring);
	}

	/** Completes the handshake and reads decode's SHM_OFFER. @return its body */
	static byte[] offerOf(Socket socket) throws IOException {
		DataInputStream in = new DataInputStream(socket.getInputStream());
		DataOutputStream out = new DataOutputStream(socket.getOutputStream());
		out.writeInt(KVFrameCodec.MAGIC);
		out.writeShort(KVMessage.PROTOCOL_VERSION);
		out.writeInt(1 + KVFrameCodec.AUTH_MIN_BODY_LENGTH);
		out.writeByte(KVFrameCodec.TYPE_AUTH);
		out.writeByte(0);
		out.write(new byte[32]);
		out.writeInt(16 << 20);
		// Its heartbeat interval: the default.
		out.writeInt(5000);
		// The accepting side dialled nothing: empty endpoint and address.
		out.writeInt(0);
		out.writeInt(0);
		out.flush();
		in.readFully(new byte[KVFrameCodec.PREFACE_LENGTH]);
		for (;;) {
			int length = in.readInt();
			int type = in.readUnsignedByte();
			byte[] body = new byte[length - 1];
			in.readFully(body);
			if (type == KVFrameCodec.TYPE_SHM_OFFER) {
				return body;
			}
		}
	}

	/** Writes SHM_REPLY. */
	void reply(boolean accepted) throws IOException {
		out.writeInt(1 + 1 + 4);
		out.writeByte(KVFrameCodec.TYPE_SHM_REPLY);
		out.writeByte(accepted ? 1 : 0);
		out.writeInt(0);
		out.flush();
	}

	void fill(int slot, byte value) {
		PlatformDependent.setMemory(ring.slotAddress(slot), ring.slotSize(), value);
	}

	void dataShm(DataHeader h, int slot) throws IOException {
		out.writeInt(1 + KVFrameCodec.DATA_HEADER_LENGTH + 4);
		out.writeByte(KVFrameCodec.TYPE_DATA_SHM);
		out.writeLong(h.room());
		out.writeByte(h.kind().ordinal());
		out.writeInt(h.region());
		out.writeLong(h.dstOffset());
		out.writeInt(h.chunkLen());
		out.writeLong(h.dstStride());
		out.writeInt(h.count());
		out.writeInt(slot);
		out.flush();
	}

	@Override
	public void close() {
		ring.unmap();
	}
}
