package io.kvferry.transport.netty.internal;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.RecvByteBufAllocator;
import io.netty.util.UncheckedBooleanSupplier;

/**
 * Lets a channel read large data payloads straight into registered memory: while {@link KVFrameDecoder} is in the
 * middle of a payload whose destination is contiguous, each read's buffer is the destination itself
 * ({@link KVFrameDecoder#landingZone}) instead of a pooled buffer the sink would copy from; on a channel that reads
 * scattered ({@link LandingNioSocketChannel}), a scatter frame's pieces too. Other reads (headers, control frames,
 * small payloads, scattered ones elsewhere) use the delegate's buffers.
 *
 * <p>One instance per channel, installed only on channels without TLS (the decoder must see the socket's bytes).
 */
public final class LandingRecvByteBufAllocator implements RecvByteBufAllocator {

	// A landing read saves a copy but costs a syscall that would otherwise also carry the next frames' headers: worth it
	// only for large contiguous stretches.
	static final int MIN_LANDING = 64 * 1024;

	// No copy follows a landing read, so it may take as much as the socket holds.
	static final int MAX_LANDING = 4 * 1024 * 1024;

	private final RecvByteBufAllocator delegate;
	private final KVFrameDecoder decoder;

	/**
	 * @param delegate the allocator for every other read
	 * @param decoder the channel's decoder, asked before every read
	 */
	public LandingRecvByteBufAllocator(RecvByteBufAllocator delegate, KVFrameDecoder decoder) {
		this.delegate = delegate;
		this.decoder = decoder;
	}

	@Override
	public Handle newHandle() {
		return new LandingHandle(delegate.newHandle(), decoder);
	}

	private static final class LandingHandle extends DelegatingHandle implements ExtendedHandle {

		private final KVFrameDecoder decoder;

		LandingHandle(Handle delegate, KVFrameDecoder decoder) {
			super(delegate);
			this.decoder = decoder;
		}

		@Override
		public ByteBuf allocate(ByteBufAllocator alloc) {
			ByteBuf landing = decoder.landingZone(MIN_LANDING, MAX_LANDING);
			return landing != null ? landing : delegate().allocate(alloc);
		}

		@Override
		public boolean continueReading(UncheckedBooleanSupplier maybeMoreDataSupplier) {
			Handle d = delegate();
			return d instanceof ExtendedHandle e ? e.continueReading(maybeMoreDataSupplier) : d.continueReading();
		}
	}
}
