package io.kvferry.test;

import java.util.concurrent.atomic.AtomicLong;

import io.kvferry.MemoryRegion;
import io.kvferry.spi.NativeMemory;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.PayloadSink;
import io.netty.buffer.ByteBuf;
import org.jspecify.annotations.Nullable;

/**
 * A test {@link PayloadSink} that scatters a payload into a {@link MemoryRegion} as the header describes: chunk
 * {@code i} at {@code dstOffset + i × dstStride}. Fails loudly on an overrun or an early {@link #complete()}.
 */
public final class RegionSink implements PayloadSink {

	private final MemoryRegion region;
	private final DataHeader header;
	private final AtomicLong received;
	private final Runnable onComplete;
	private final long stride;
	private final @Nullable AtomicLong landed;
	private long position;

	/**
	 * @param region where bytes land
	 * @param header the frame
	 * @param received counts payload bytes across sinks
	 * @param onComplete runs after the last byte
	 */
	public RegionSink(MemoryRegion region, DataHeader header, AtomicLong received, Runnable onComplete) {
		this(region, header, received, null, onComplete);
	}

	/**
	 * A sink that also offers landing zones over contiguous destinations, counting the bytes read straight into them.
	 *
	 * @param landed counts payload bytes that arrived in place; {@code null} offers no landing zone
	 */
	public RegionSink(MemoryRegion region, DataHeader header, AtomicLong received, @Nullable AtomicLong landed,
			Runnable onComplete) {
		if (!region.contains(header.dstOffset(), header.span())) {
			throw new IllegalArgumentException("frame " + header + " outside " + region);
		}
		this.region = region;
		this.header = header;
		this.received = received;
		this.onComplete = onComplete;
		this.stride = header.count() == 1 ? header.chunkLen() : header.dstStride();
		this.landed = landed;
	}

	@Override
	public @Nullable ByteBuf landingZone(int minBytes, int maxBytes) {
		long left = header.payloadLength() - position;
		if (landed == null || stride != header.chunkLen() || left < minBytes) {
			return null;
		}
		return NativeMemory.wrap(region.address() + header.dstOffset() + position, (int) Math.min(left, maxBytes))
				.clear();
	}

	@Override
	public void write(ByteBuf segment) {
		int remaining = segment.readableBytes();
		if (position + remaining > header.payloadLength()) {
			throw new IllegalStateException("overrun: " + (position + remaining) + " > " + header.payloadLength());
		}
		int index = segment.readerIndex();
		while (remaining > 0) {
			long chunk = position / header.chunkLen();
			int within = (int) (position - chunk * header.chunkLen());
			int n = Math.min(remaining, header.chunkLen() - within);
			long dst = region.address() + header.dstOffset() + chunk * stride + within;
			NativeMemory.copy(segment, index, dst, n);
			index += n;
			position += n;
			remaining -= n;
		}
		received.addAndGet(segment.readableBytes());
	}

	@Override
	public void landed(int n) {
		if (landed == null || position + n > header.payloadLength()) {
			throw new IllegalStateException("landed(" + n + ") at " + position + " of " + header.payloadLength()
					+ (landed == null ? " without a zone offered" : ""));
		}
		landed.addAndGet(n);
		position += n;
		received.addAndGet(n);
	}

	@Override
	public void complete() {
		if (position != header.payloadLength()) {
			throw new IllegalStateException("complete after " + position + " of " + header.payloadLength() + " bytes");
		}
		onComplete.run();
	}
}
