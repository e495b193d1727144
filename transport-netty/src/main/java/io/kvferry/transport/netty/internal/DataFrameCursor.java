package io.kvferry.transport.netty.internal;

import io.kvferry.spi.NativeMemory;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.util.internal.PlatformDependent;

/**
 * Cuts one {@link DataBlock} into data frames whose payload is at most {@code maxPayload} bytes, and produces each
 * frame's payload from the sender's memory.
 *
 * <p>A block that fits is one frame with the block's own header. A larger block is cut where the receiver can still
 * place every byte: anywhere when source and destination are both contiguous (each frame one chunk at an adjusted
 * {@code dstOffset}), at chunk boundaries when either side is strided, and inside chunks (one frame per piece) when a
 * single strided chunk is larger than the limit.
 *
 * <p>Payloads from contiguous source memory are wrapped without copying; strided source chunks are gathered into one
 * direct buffer of the frame's payload length, native to native. Not thread-safe: used on one event loop.
 */
public final class DataFrameCursor {

	private enum Mode {
		/** The block is one frame. */
		WHOLE,
		/** Contiguous on both sides: frames cut at any byte. */
		RUN,
		/** Strided: frames of whole chunks. */
		CHUNKS,
		/** Strided with chunks larger than a frame: each chunk cut into pieces. */
		PIECES
	}

	private final DataBlock block;
	private final DataHeader header;
	private final int maxPayload;
	private final Mode mode;
	private int chunk;
	private long offset;
	private long remaining;

	private DataHeader frame;
	private long frameSource;
	private long frameSourceStride;

	/**
	 * @param block the block to send
	 * @param maxPayload largest payload of one frame
	 */
	public DataFrameCursor(DataBlock block, int maxPayload) {
		this.block = block;
		this.header = block.header();
		this.maxPayload = maxPayload;
		this.remaining = header.payloadLength();
		boolean dstContiguous = header.count() == 1 || header.dstStride() == header.chunkLen();
		if (remaining <= maxPayload) {
			mode = Mode.WHOLE;
		}
		else if (block.isContiguous() && dstContiguous) {
			mode = Mode.RUN;
		}
		else if (header.chunkLen() <= maxPayload) {
			mode = Mode.CHUNKS;
		}
		else {
			mode = Mode.PIECES;
		}
	}

	/** @return the block being sent */
	public DataBlock block() {
		return block;
	}

	/** @return whether another frame follows */
	public boolean hasNext() {
		return mode == Mode.WHOLE ? frame == null : remaining > 0;
	}

	/** @return payload bytes not yet cut into frames */
	public long remainingBytes() {
		return remaining;
	}

	/**
	 * Advances to the next frame.
	 *
	 * @return the header to send for it
	 */
	public DataHeader next() {
		if (!hasNext()) {
			throw new IllegalStateException("no frame left of " + header);
		}
		switch (mode) {
			case WHOLE:
				frame = header;
				frameSource = block.srcAddress();
				frameSourceStride = block.srcStride();
				break;
			case RUN: {
				int piece = (int) Math.min(maxPayload, remaining);
				frame = piece(header.dstOffset() + offset, piece);
				frameSource = block.srcAddress() + offset;
				offset += piece;
				break;
			}
			case CHUNKS: {
				int n = Math.min(header.count() - chunk, maxPayload / header.chunkLen());
				frame = new DataHeader(header.room(), header.kind(), header.region(),
						header.dstOffset() + chunk * header.dstStride(), header.chunkLen(), header.dstStride(), n);
				frameSource = block.srcAddress() + chunk * block.srcStride();
				frameSourceStride = block.srcStride();
				chunk += n;
				break;
			}
			default: {
				int piece = (int) Math.min(maxPayload, header.chunkLen() - offset);
				frame = piece(header.dstOffset() + chunk * header.dstStride() + offset, piece);
				frameSource = block.srcAddress() + chunk * block.srcStride() + offset;
				offset += piece;
				if (offset == header.chunkLen()) {
					chunk++;
					offset = 0;
				}
				break;
			}
		}
		remaining -= frame.payloadLength();
		return frame;
	}

	private DataHeader piece(long dstOffset, int length) {
		frameSourceStride = length;
		return new DataHeader(header.room(), header.kind(), header.region(), dstOffset, length, length, 1);
	}

	/**
	 * Copies the payload of the frame {@link #next()} returned last to {@code dst}, chunks packed one after another
	 * (the payload's byte order), native to native.
	 *
	 * @param dst where its {@code payloadLength()} bytes go
	 */
	public void copyPayload(long dst) {
		int count = frame.count();
		int chunkLen = frame.chunkLen();
		if (count == 1 || frameSourceStride == chunkLen) {
			NativeMemory.copy(frameSource, dst, frame.payloadLength());
			return;
		}
		for (int i = 0; i < count; i++) {
			NativeMemory.copy(frameSource + i * frameSourceStride, dst + (long) i * chunkLen, chunkLen);
		}
	}

	/**
	 * The payload of the frame {@link #next()} returned last. Contiguous source bytes are wrapped in place with
	 * {@link NativeMemory#view} (no copy; releasing the view frees nothing, the memory stays the region owner's);
	 * strided ones are gathered into one direct buffer from {@code alloc}, native to native, never via the heap.
	 *
	 * @return a buffer the caller owns and must write or release, or {@code null} when the payload is empty
	 */
	public ByteBuf payload(ByteBufAllocator alloc) {
		int length = (int) frame.payloadLength();
		if (length == 0) {
			return null;
		}
		int count = frame.count();
		int chunkLen = frame.chunkLen();
		if (count == 1 || frameSourceStride == chunkLen) {
			return NativeMemory.view(frameSource, length);
		}
		ByteBuf gathered = alloc.directBuffer(length, length);
		long dst = gathered.hasMemoryAddress() ? gathered.memoryAddress()
				: PlatformDependent.directBufferAddress(gathered.nioBuffer(0, length));
		for (int i = 0; i < count; i++) {
			NativeMemory.copy(frameSource + i * frameSourceStride, dst + (long) i * chunkLen, chunkLen);
		}
		gathered.writerIndex(length);
		return gathered;
	}
}
