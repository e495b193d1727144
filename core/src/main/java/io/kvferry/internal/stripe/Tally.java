package io.kvferry.internal.stripe;

import java.nio.ByteBuffer;
import java.util.zip.CRC32C;

import io.kvferry.spi.Block;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.NativeMemory;
import io.kvferry.spi.ScatterBlock;
import io.kvferry.spi.ScatterHeader;

/**
 * What one room moved on one connection (one stripe): payload bytes and, when asked for, a CRC32C of them in stream
 * order. Prefill tallies what it hands to the transport, decode what landed (its payload writer feeds the tally a
 * {@link DialledConnection} hands out with each data header); a Success carries prefill's tally and decode compares.
 * Bytes are read from native memory through one reusable view, never copied.
 *
 * <p>Not thread-safe: one connection's thread (or the room's monitor) feeds it.
 */
public final class Tally {

	private final CRC32C crc;
	// One visitor for every piece of every scatter block, not a method reference made per piece.
	private final ScatterBlock.ChunkVisitor checksummer = this::checksum;
	private ByteBuffer view;
	private long bytes;

	/** @param checksum whether to compute a CRC32C too */
	public Tally(boolean checksum) {
		this.crc = checksum ? new CRC32C() : null;
	}

	/** Adds {@code length} bytes at {@code address} to the checksum (in stream order); counts nothing. */
	public void checksum(long address, int length) {
		if (crc != null && length > 0) {
			view = NativeMemory.retarget(view, address, length);
			crc.update(view);
		}
	}

	/** Takes a block about to be sent: its source bytes in the order the receiver gets them, and their count. */
	public void add(Block block) {
		if (block instanceof ScatterBlock s) {
			add(s);
		}
		else {
			add((DataBlock) block);
		}
	}

	private void add(DataBlock block) {
		DataHeader h = block.header();
		if (block.isContiguous()) {
			checksum(block.srcAddress(), Math.toIntExact(h.payloadLength()));
		}
		else {
			for (int i = 0; i < h.count(); i++) {
				checksum(block.srcAddress() + i * block.srcStride(), h.chunkLen());
			}
		}
		count(h.payloadLength());
	}

	/** A scatter block's pieces go in piece order. */
	private void add(ScatterBlock block) {
		ScatterHeader h = block.header();
		long total = 0;
		for (int i = 0; i < h.count(); i++) {
			block.chunks(i, checksummer);
			total += h.length(i);
		}
		count(total);
	}

	/** Counts bytes whose checksum was taken. */
	public void count(long n) {
		bytes += n;
	}

	public long bytes() {
		return bytes;
	}

	/** @return the CRC32C so far, or {@link KVMessage#NO_CHECKSUM} when none is computed */
	public long checksum() {
		return crc == null ? KVMessage.NO_CHECKSUM : crc.getValue();
	}
}
