package io.kvferry.internal;

import java.util.function.BooleanSupplier;
import java.util.function.LongConsumer;

import io.kvferry.internal.stripe.Tally;
import io.kvferry.spi.NativeMemory;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.PayloadSink;
import io.netty.buffer.ByteBuf;

/**
 * Scatters a data frame's payload into registered memory: chunk {@code i} of {@code chunkLen} bytes lands at
 * {@code base + i × stride}. Segments may split chunks anywhere. Offers the destination as a landing zone so that a
 * transport can read straight into it; otherwise copies native to native (or from the segment's array);
 * the KV bytes never pass through a fresh heap buffer.
 */
final class PayloadWriter implements PayloadSink {

	private final long base;
	private final int chunkLen;
	private final long stride;
	private final long length;
	private final BooleanSupplier live;
	private final Tally tally;
	private final LongConsumer onComplete;
	private long position;
	private boolean fenced;
	// Bytes of the landing zone offered last not yet reported by landed(); -1 when none is outstanding.
	private int zone = -1;

	/**
	 * @param base address of the first chunk's destination
	 * @param header the frame (chunk length, stride, count)
	 * @param live checked before every segment: once false, no further byte lands (the room was aborted)
	 * @param tally takes every landed piece in payload order, and the payload's length once all of it landed
	 * @param onComplete gets the payload's length after the last byte, unless the writer was fenced
	 */
	PayloadWriter(long base, DataHeader header, BooleanSupplier live, Tally tally, LongConsumer onComplete) {
		this.base = base;
		this.chunkLen = header.chunkLen();
		this.stride = header.count() == 1 ? header.chunkLen() : header.dstStride();
		this.length = header.payloadLength();
		this.live = live;
		this.tally = tally;
		this.onComplete = onComplete;
	}

	@Override
	public void write(ByteBuf segment) {
		// A zone offered and then not read into (the read came through another buffer) is simply not outstanding.
		zone = -1;
		int remaining = segment.readableBytes();
		if (fenced || remaining == 0) {
			return;
		}
		if (!live.getAsBoolean()) {
			fenced = true;
			return;
		}
		if (position + remaining > length) {
			throw new IllegalStateException("payload overrun: " + (position + remaining) + " > " + length);
		}
		int index = segment.readerIndex();
		while (remaining > 0) {
			long chunk = position / chunkLen;
			int within = (int) (position - chunk * chunkLen);
			int n = Math.min(remaining, chunkLen - within);
			long dst = base + chunk * stride + within;
			NativeMemory.copy(segment, index, dst, n);
			tally.checksum(dst, n);
			index += n;
			position += n;
			remaining -= n;
		}
	}

	@Override
	public ByteBuf landingZone(int minBytes, int maxBytes) {
		if (fenced) {
			return null;
		}
		long chunk = position / chunkLen;
		int within = (int) (position - chunk * chunkLen);
		// Contiguous destination: the rest of the payload; strided: the rest of this chunk.
		long contiguous = stride == chunkLen ? length - position : chunkLen - within;
		if (contiguous < Math.max(1, minBytes) || !live.getAsBoolean()) {
			return null;
		}
		int n = (int) Math.min(contiguous, maxBytes);
		zone = n;
		return NativeMemory.view(base + chunk * stride + within, n).clear();
	}

	@Override
	public void landed(int n) {
		if (zone < 0 || n < 1 || n > zone) {
			throw new IllegalStateException("landed(" + n + ") : " + (zone < 0 ? "no landing zone outstanding"
					: "more than the zone's " + zone + " bytes"));
		}
		// Never fenced here: a fence clears the outstanding zone, and a fenced writer offers none. What the read left
		// of the zone stays outstanding for the next read into it.
		zone = n == zone ? -1 : zone - n;
		if (!live.getAsBoolean()) {
			// In place already: the fence stops everything after this read.
			fenced = true;
			return;
		}
		long chunk = position / chunkLen;
		int within = (int) (position - chunk * chunkLen);
		tally.checksum(base + chunk * stride + within, n);
		position += n;
	}

	@Override
	public void complete() {
		if (!fenced) {
			tally.count(length);
			onComplete.accept(length);
		}
	}
}
