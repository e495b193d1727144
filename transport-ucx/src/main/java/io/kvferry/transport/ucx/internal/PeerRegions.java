package io.kvferry.transport.ucx.internal;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

import io.kvferry.ProtocolException;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.NativeMemory;
import io.kvferry.spi.RegionKind;
import io.kvferry.spi.ScatterHeader;
import io.netty.buffer.ByteBuf;
import org.openucx.jucx.ucp.UcpAmData;
import org.openucx.jucx.ucp.UcpRemoteKey;

/**
 * The peer's registered regions this side may read, as its KEY records announced them, and the GET and SCATTER
 * records that name them: a read goes to {@link Inbound} only once its source lies inside the region it names, so
 * no number the peer sends makes this side read outside what the peer registered. On the node's loop only.
 */
final class PeerRegions {

	/** A remote region decode may read, with its unpacked key. */
	private record Remote(long base, long length, UcpRemoteKey key) {
	}

	private final UcxConnection connection;
	private final UcxNode node;
	private final Inbound inbound;
	private final List<Remote> peerRegions = new ArrayList<>();

	PeerRegions(UcxConnection connection, UcxNode node, Inbound inbound) {
		this.connection = connection;
		this.node = node;
		this.inbound = inbound;
	}

	/** A KEY record: the peer announced its next registered region. */
	void key(ByteBuf header, UcpAmData data) {
		int index = header.readInt();
		long base = header.readLong();
		long length = header.readLong();
		if (index != peerRegions.size() || base == 0 || length <= 0 || base + length < base
				|| !data.isDataValid() || data.getLength() > 1 << 16) {
			throw new ProtocolException("malformed key of region " + index + " (expected: region "
					+ peerRegions.size() + ", a region of at least one byte, a key of at most 64 KiB)");
		}
		byte[] key = new byte[(int) data.getLength()];
		NativeMemory.byteBuffer(data.getDataAddress(), key.length).get(key);
		unpack(base, length, key);
	}

	private void unpack(long base, long length, byte[] key) {
		if (peerRegions.size() >= Wire.MAX_REGIONS) {
			throw new ProtocolException("more than " + Wire.MAX_REGIONS + " registered regions announced");
		}
		ByteBuffer packed = ByteBuffer.allocateDirect(key.length);
		packed.put(key).flip();
		peerRegions.add(new Remote(base, length, connection.endpoint().unpackRemoteKey(packed)));
		node.remoteKeys.increment();
	}

	/** A GET record: a block this side reads from the region it names. */
	void pull(long seq, ByteBuf header) {
		DataHeader h = RecordCodec.read(header, DataHeader.class);
		long source = header.readLong();
		long stride = header.readLong();
		int region = header.readInt();
		long span;
		try {
			span = h.count() == 1 || stride == h.chunkLen() ? Math.multiplyExact((long) h.chunkLen(), h.count())
					: Math.addExact(Math.multiplyExact(h.count() - 1L, stride), h.chunkLen());
		}
		catch (ArithmeticException e) {
			throw new ProtocolException("read of " + h + " spans more than 2^63 bytes");
		}
		if (stride < 0) {
			throw new ProtocolException("read of " + h + " with source stride " + stride);
		}
		Remote r = remoteFor(h, region, source, span);
		inbound.pull(seq, h, source, stride, r.key);
	}

	/** @return the peer's region a read names, once the read's source lies inside it */
	private Remote remoteFor(DataHeader h, int region, long source, long span) {
		if (region < 0 || region >= peerRegions.size()) {
			throw new ProtocolException("read of " + h + " names region " + region + " (expected: 0.."
					+ (peerRegions.size() - 1) + ")");
		}
		Remote r = peerRegions.get(region);
		if (source < r.base || span < 0 || source - r.base > r.length - span) {
			throw new ProtocolException("read of " + h + " at 0x" + Long.toHexString(source) + " leaves registered "
					+ "region " + region + " [0x" + Long.toHexString(r.base) + ", +" + r.length + ")");
		}
		return r;
	}

	/** Pieces of one room in one message: their bytes follow the table, or decode reads them. */
	void scatter(long seq, ByteBuf header, UcpAmData data) {
		int mode = header.readUnsignedByte();
		long room = header.readLong();
		if (!data.isDataValid() || mode > 1) {
			throw new ProtocolException("pieces of room " + room + " came by rendezvous or in mode " + mode
					+ " (expected: eager, mode 0 or 1)");
		}
		ByteBuf in = NativeMemory.wrap(data.getDataAddress(), (int) data.getLength());
		try {
			if (in.readableBytes() < 5) {
				throw new ProtocolException("pieces of room " + room + ": truncated table");
			}
			RegionKind kind = RegionKind.fromOrdinal(in.readUnsignedByte());
			int n = in.readInt();
			if (n < 1 || n > ScatterHeader.MAX_PIECES || in.readableBytes() < 16L * n) {
				throw new ProtocolException("pieces of room " + room + ": " + n + " pieces with " + in.readableBytes()
						+ " bytes (expected: 1.." + ScatterHeader.MAX_PIECES + " pieces of 16 bytes each)");
			}
			int[] regions = new int[n];
			long[] offsets = new long[n];
			int[] lengths = new int[n];
			for (int i = 0; i < n; i++) {
				regions[i] = in.readInt();
				offsets[i] = in.readLong();
				lengths[i] = in.readInt();
			}
			ScatterHeader h = new ScatterHeader(room, kind, n, regions, offsets, lengths);
			if (mode == 0) {
				h.validate(in.readableBytes());
				ByteBuf payload = node.allocator.directBuffer(in.readableBytes(), in.readableBytes());
				payload.writeBytes(in);
				inbound.scatter(seq, h, payload);
				return;
			}
			h.validate(h.payloadLength());
			if (in.readableBytes() != 12L * n) {
				throw new ProtocolException("pieces of room " + room + ": " + in.readableBytes() + " bytes of sources "
						+ "(expected: " + 12L * n + ")");
			}
			for (int i = 0; i < n; i++) {
				int region = in.readInt();
				long source = in.readLong();
				Remote r = remoteFor(h.piece(i), region, source, h.length(i));
				inbound.pull(seq, h.piece(i), source, h.length(i), r.key);
			}
		}
		finally {
			in.release();
		}
	}

	/** The connection closed: the peer's keys are released. */
	void close() {
		for (Remote r : peerRegions) {
			r.key.close();
		}
		peerRegions.clear();
	}
}
