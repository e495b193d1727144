package io.kvferry.transport.netty.internal;

import io.kvferry.spi.DataBlock;
import io.kvferry.spi.NativeMemory;
import io.kvferry.spi.ScatterBlock;
import io.kvferry.spi.ScatterHeader;
import io.kvferry.transport.netty.internal.frame.ScatterCodec;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;

/**
 * Cuts one {@link ScatterBlock} into {@code DATA_SCATTER} frames of at most {@code maxPayload} payload bytes each, in
 * piece order. A frame is a few buffers written in order: its header, then the pieces wrapped in place in the sender's
 * memory (pieces adjacent there share one wrapper), so that Netty writes frames with gathered writes and copies
 * nothing. They are separate buffers rather than one composite: a gathering write takes a wrapper's address as it is,
 * where a composite costs a component and an NIO buffer per piece on every write. Only pieces gathered from a strided
 * source are copied, into a direct buffer the frame owns; no KV byte is copied onto the heap.
 *
 * <p>A piece larger than a frame, and every piece when the connection writes a same-host ring (whose slots carry
 * one-piece {@code DATA_SHM} frames), is handed out as a data block of its own ({@link #takeSingle}), for a
 * {@link DataFrameCursor} to send. Not thread-safe: used on one event loop.
 */
final class ScatterCursor {

	private final ScatterBlock block;
	private final ScatterHeader header;
	private final int maxPayload;
	private final boolean singles;
	private int next;
	private long remaining;
	private int framePayload;
	// The buffers of the frame nextFrame made last, in wire order, until the caller takes them: a header and at most
	// one per piece, so sized once for the largest frame the block can make.
	private final ByteBuf[] parts;
	private int partCount;

	/**
	 * @param block the block to send
	 * @param maxPayload largest payload of one frame
	 * @param singles whether every piece goes as its own data block (no scatter frames on this path)
	 */
	ScatterCursor(ScatterBlock block, int maxPayload, boolean singles) {
		this.block = block;
		this.header = block.header();
		this.maxPayload = maxPayload;
		this.singles = singles;
		this.remaining = block.payloadLength();
		this.parts = new ByteBuf[singles ? 0 : 1 + Math.min(header.count(), ScatterHeader.MAX_PIECES)];
	}

	ScatterBlock block() {
		return block;
	}

	/** @return whether a piece is left */
	boolean hasNext() {
		return next < header.count();
	}

	/** @return payload bytes not yet handed out */
	long remainingBytes() {
		return remaining;
	}

	/** @return payload bytes of the frame {@link #nextFrame} made last */
	int framePayload() {
		return framePayload;
	}

	/** @return the next piece as a data block of its own when it cannot go in a scatter frame, else {@code null} */
	DataBlock takeSingle() {
		int length = header.length(next);
		if (!singles && length <= maxPayload) {
			return null;
		}
		remaining -= length;
		return block.piece(next++);
	}

	/**
	 * Makes the next frame: as many of the next pieces as fit (at least one; call {@link #takeSingle} first).
	 *
	 * @return how many buffers make the frame: take each with {@link #part} and write them in order, the first being
	 *         its length, type and header
	 */
	int nextFrame(ByteBufAllocator alloc) {
		int from = next;
		long payload = 0;
		int gathered = 0;
		while (next < header.count() && next - from < ScatterHeader.MAX_PIECES
				&& payload + header.length(next) <= maxPayload) {
			if (!block.isContiguous(next)) {
				gathered += header.length(next);
			}
			payload += header.length(next++);
		}
		framePayload = (int) payload;
		remaining -= payload;
		partCount = 0;
		add(ScatterCodec.encode(alloc, header, from, next, framePayload));
		// Pieces whose source is strided (re-laid KV: one piece per head, its tokens a token apart) are copied into
		// one direct buffer of the frame's, in order: wrapping each chunk of a few hundred bytes in place would cost a
		// buffer object and a gathered-write entry apiece, more than copying it. The frame owns the staging buffer
		// through its slices and frees it once Netty wrote or dropped the frame.
		ByteBuf staging = gathered == 0 ? null : alloc.directBuffer(gathered, gathered);
		try {
			long start = 0;
			int length = 0;
			int staged = 0;
			for (int i = from; i < next; i++) {
				if (!block.isContiguous(i)) {
					if (length > 0) {
						add(NativeMemory.view(start, length));
						length = 0;
					}
					block.chunks(i, (address, len) -> stage(staging, address, len));
					staged += header.length(i);
					continue;
				}
				if (staged > 0) {
					add(staging.retainedSlice(staging.writerIndex() - staged, staged));
					staged = 0;
				}
				long src = block.srcAddress(i);
				if (length > 0 && src == start + length) {
					length += header.length(i);
					continue;
				}
				if (length > 0) {
					add(NativeMemory.view(start, length));
				}
				start = src;
				length = header.length(i);
			}
			if (staged > 0) {
				add(staging.retainedSlice(staging.writerIndex() - staged, staged));
			}
			if (length > 0) {
				add(NativeMemory.view(start, length));
			}
		}
		catch (RuntimeException | Error e) {
			// No part of a frame that cannot be made whole may reach the wire.
			for (int i = 0; i < partCount; i++) {
				parts[i].release();
				parts[i] = null;
			}
			partCount = 0;
			throw e;
		}
		finally {
			if (staging != null) {
				staging.release();
			}
		}
		return partCount;
	}

	/**
	 * @param i a buffer of the frame {@link #nextFrame} made last, below the count it returned
	 * @return that buffer, which the caller now owns; the cursor keeps no reference to it
	 */
	ByteBuf part(int i) {
		ByteBuf part = parts[i];
		parts[i] = null;
		return part;
	}

	private void add(ByteBuf part) {
		parts[partCount++] = part;
	}

	/** Appends {@code length} bytes at {@code address} to the staging buffer. */
	private static void stage(ByteBuf staging, long address, int length) {
		int at = staging.writerIndex();
		if (staging.hasMemoryAddress()) {
			NativeMemory.copy(address, staging.memoryAddress() + at, length);
		}
		else {
			staging.setBytes(at, NativeMemory.byteBuffer(address, length));
		}
		staging.writerIndex(at + length);
	}
}
