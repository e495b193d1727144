package io.kvferry.internal.stripe;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.RegionKind;
import io.kvferry.spi.SendGate;

/**
 * Cuts data blocks into pieces that can be dealt across a session's stripes. A piece is a run of whole chunks of its
 * block (or, for a block of one chunk, a run of its bytes), so it writes a subset of the bytes its block writes and
 * passes the receiver's write check wherever its block does.
 */
final class Stripes {

	/** Largest piece dealt to one stripe: big enough for few frames, small enough to spread a room evenly. */
	static final int PIECE = 4 << 20;

	private Stripes() {
	}

	/** @return the one-chunk block of {@code length} contiguous bytes at {@code srcAddress} to a KV region's offset */
	static DataBlock kvBlock(long room, int region, long dstOffset, int length, long srcAddress, SendGate gate) {
		return new DataBlock(new DataHeader(room, RegionKind.KV, region, dstOffset, length, 0, 1), srcAddress, 0, gate);
	}

	/**
	 * Hands {@code block} to {@code out} in pieces of at most {@code max} payload bytes (a single chunk longer than
	 * that of a block of many chunks stays whole), in order.
	 */
	static void cut(DataBlock block, int max, Consumer<DataBlock> out) {
		DataHeader h = block.header();
		if (h.payloadLength() <= max) {
			out.accept(block);
			return;
		}
		if (h.count() == 1) {
			for (long off = 0; off < h.chunkLen(); off += max) {
				int n = (int) Math.min(max, h.chunkLen() - off);
				out.accept(new DataBlock(new DataHeader(h.room(), h.kind(), h.region(), h.dstOffset() + off, n,
						h.dstStride(), 1), block.srcAddress() + off, block.srcStride(), block.gate()));
			}
			return;
		}
		int per = Math.max(1, max / h.chunkLen());
		for (int i = 0; i < h.count(); i += per) {
			int k = Math.min(per, h.count() - i);
			out.accept(new DataBlock(new DataHeader(h.room(), h.kind(), h.region(), h.dstOffset() + i * h.dstStride(),
					h.chunkLen(), h.dstStride(), k), block.srcAddress() + i * block.srcStride(), block.srcStride(),
					block.gate()));
		}
	}

	/** @return the stripes of a session that are attached so far (null slots have not joined yet), in index order */
	static List<KVConnection> attached(KVConnection[] stripes) {
		List<KVConnection> list = new ArrayList<>(stripes.length);
		for (KVConnection c : stripes) {
			if (c != null) {
				list.add(c);
			}
		}
		return list;
	}
}
