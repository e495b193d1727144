package io.kvferry.internal;

import java.util.function.BooleanSupplier;

import io.kvferry.internal.stripe.Tally;
import io.kvferry.spi.NativeMemory;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.PayloadSink;
import io.kvferry.spi.RegionKind;
import io.netty.buffer.ByteBuf;
import org.jspecify.annotations.Nullable;

/**
 * Scatters a data frame's payload into registered memory: chunk {@code i} of {@code chunkLen} bytes lands at
 * {@code base + i × stride}. Segments may split chunks anywhere. Offers the destination as a landing zone so that a
 * transport can read straight into it; otherwise copies native to native (or from the segment's array);
 * the KV bytes never pass through a fresh heap buffer.
 *
 * <p>It keeps the write's fields (region, offset, chunks) for whoever it tells of the payload's end, so that one
 * {@link Completion} serves every writer of a room and a scatter frame's piece needs no header object of its own.
 */
final class PayloadWriter implements PayloadSink {

	/** Told once a writer's whole payload landed; never for a fenced writer. */
	@FunctionalInterface
	interface Completion {
		/**
		 * @param writer the writer, whose write fields say where the payload landed
		 * @param length the payload's bytes
		 */
		void landed(PayloadWriter writer, long length);
	}

	private final long base;
	private final RegionKind kind;
	private final int region;
	private final long offset;
	private final int chunkLen;
	private final long stride;
	private final int count;
	private final long length;
	private final BooleanSupplier live;
	private final Tally tally;
	private final Completion onComplete;
	private long position;
	private boolean fenced;
	// Bytes of the landing zone offered last not yet reported by landed(); -1 when none is outstanding.
	private int zone = -1;
	// The view of the destination that the landing zones of one contiguous stretch share, from payload position
	// viewStart on: a payload of megabytes is read over many wake-ups, and each read is offered the same view at its
	// position instead of a new one. This writer holds one reference, released at the payload's end or its fence (an
	// abandoned writer, its connection gone mid-payload, takes it along: a view owns no memory); each offer hands the
	// reader another.
	private @Nullable ByteBuf view;
	private long viewStart;

	/**
	 * @param base address of the first chunk's destination
	 * @param kind the kind of region the write lands in
	 * @param region which region of that kind
	 * @param offset the first chunk's byte offset in the region
	 * @param chunkLen bytes per chunk
	 * @param stride bytes from one chunk's start to the next's ({@link GrantLedger#stride}: the chunk length for one)
	 * @param count chunks
	 * @param live checked before every segment: once false, no further byte lands (the room was aborted)
	 * @param tally takes every landed piece in payload order, and the payload's length once all of it landed
	 * @param onComplete told after the last byte, unless the writer was fenced
	 */
	PayloadWriter(long base, RegionKind kind, int region, long offset, int chunkLen, long stride, int count,
			BooleanSupplier live, Tally tally, Completion onComplete) {
		this.base = base;
		this.kind = kind;
		this.region = region;
		this.offset = offset;
		this.chunkLen = chunkLen;
		this.stride = stride;
		this.count = count;
		this.length = (long) chunkLen * count;
		this.live = live;
		this.tally = tally;
		this.onComplete = onComplete;
	}

	/**
	 * @param base address of the first chunk's destination
	 * @param header the frame (region, offset, chunk length, stride, count)
	 * @see #PayloadWriter(long, RegionKind, int, long, int, long, int, BooleanSupplier, Tally, Completion)
	 */
	static PayloadWriter of(long base, DataHeader header, BooleanSupplier live, Tally tally, Completion onComplete) {
		return new PayloadWriter(base, header.kind(), header.region(), header.dstOffset(), header.chunkLen(),
				GrantLedger.stride(header), header.count(), live, tally, onComplete);
	}

	RegionKind kind() {
		return kind;
	}

	int region() {
		return region;
	}

	long offset() {
		return offset;
	}

	int chunkLen() {
		return chunkLen;
	}

	long stride() {
		return stride;
	}

	int count() {
		return count;
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
			fence();
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
		long at = position - viewStart;
		if (view != null && at >= 0 && at < view.capacity()) {
			// Inside the stretch the view was made for, so its bytes from here on are this zone's; offered only when
			// no larger than this offer may be, and still worth a read.
			int rest = (int) (view.capacity() - at);
			if (rest <= n && rest >= Math.max(1, minBytes)) {
				zone = rest;
				return view.retain().setIndex((int) at, (int) at);
			}
		}
		releaseView();
		view = NativeMemory.view(base + chunk * stride + within, n);
		viewStart = position;
		zone = n;
		return view.retain().clear();
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
			fence();
			return;
		}
		long chunk = position / chunkLen;
		int within = (int) (position - chunk * chunkLen);
		tally.checksum(base + chunk * stride + within, n);
		position += n;
	}

	private void fence() {
		fenced = true;
		releaseView();
	}

	private void releaseView() {
		if (view != null) {
			ByteBuf released = view;
			view = null;
			released.release();
		}
	}

	@Override
	public void complete() {
		releaseView();
		if (!fenced) {
			tally.count(length);
			onComplete.landed(this, length);
		}
	}
}
