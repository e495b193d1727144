package io.kvferry.transport.netty.tck;

import io.kvferry.spi.KVTransport;
import io.kvferry.test.tck.HandshakeTransportTck;
import io.kvferry.transport.netty.NettyKVTransport;
import io.netty.buffer.PooledByteBufAllocator;

/**
 * The transport contract for {@link NettyKVTransport} over loopback TCP; subclasses give the configuration (plain, TLS,
 * shared secret) and a peer its handshake refuses.
 */
abstract class NettyTransportTck extends HandshakeTransportTck {

	/** The default high write-buffer watermark of {@link NettyKVTransport#create()}. */
	private static final long HIGH_WATERMARK = 8 << 20;
	/** The TCK's data blocks are 1 MiB: one frame each. */
	private static final long FRAME = 1 << 20;

	/** @return the configuration both sides of a test use, before the event loop count */
	abstract NettyKVTransport configured();

	@Override
	protected KVTransport createServer() {
		return configured().eventLoopThreads(1);
	}

	@Override
	protected KVTransport createClient(KVTransport server) {
		return configured().eventLoopThreads(1);
	}

	@Override
	protected void dispose(KVTransport transport) {
		((NettyKVTransport) transport).disposeNow(TIMEOUT);
	}

	/** Live bytes of the pooled allocator every kvferry channel takes its buffers from. */
	@Override
	protected long allocatedBytes() {
		return PooledByteBufAllocator.DEFAULT.pinnedDirectMemory() + PooledByteBufAllocator.DEFAULT.pinnedHeapMemory();
	}

	/**
	 * What Netty may hold for a connection: writes stop at the high watermark, plus the frame being written (TLS: its
	 * encrypted copy too) and the receiver's read buffers.
	 */
	@Override
	protected long inFlightBound() {
		return HIGH_WATERMARK + 4 * FRAME;
	}
}
