package io.kvferry.transport.netty.internal;

import java.util.Objects;
import java.util.function.Consumer;
import java.util.function.Supplier;

import io.kvferry.HostPort;
import io.kvferry.KVFerryException;
import io.kvferry.ProtocolException;
import io.kvferry.spi.Block;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.ScatterBlock;
import io.kvferry.spi.SendGate;
import io.kvferry.spi.SendListener;
import io.netty.channel.Channel;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.ChannelPromise;

/**
 * The sending half of one {@link NettyKVConnection}: its {@link OutboundQueue}, and what the engine sends on its way
 * there. Each message, data block and scatter block is checked on the caller's thread (a malformed header throws there,
 * not later on the event loop); a message's write, which Netty reports through a promise, is told to its
 * {@link SendListener}; and whatever the connection could not send fails with one error naming the connection, its
 * peer and why it closed. Thread-safe: any thread sends.
 */
final class ConnectionSends {

	private final Channel channel;
	private final String id;
	private final Supplier<HostPort> remote;
	private final Supplier<String> closeReason;
	private final OutboundQueue outbound;

	/**
	 * @param channel the connection's channel, registered with its event loop
	 * @param settings the transport's settings: the frame length until the peer names its own, the close grace
	 * @param id the connection's id
	 * @param remote the peer's address
	 * @param closeReason why the connection closed or is closing, or {@code null} while it is open
	 * @param failNow closes the connection at once with the reason (the peer broke the same-host ring)
	 */
	ConnectionSends(Channel channel, TransportSettings settings, String id, Supplier<HostPort> remote,
			Supplier<String> closeReason, Consumer<ProtocolException> failNow) {
		this.channel = channel;
		this.id = id;
		this.remote = remote;
		this.closeReason = closeReason;
		this.outbound = new OutboundQueue(channel, settings.maxFrameLength(), settings.heartbeatInterval(),
				this::closedException, failNow);
	}

	/** @return the queue the sends go to, which the connection starts, drains and closes */
	OutboundQueue queue() {
		return outbound;
	}

	/** Queues a control message; {@code listener} hears that it was written, or why it was not. */
	void message(KVMessage message, SendGate gate, SendListener listener) {
		Objects.requireNonNull(message, "message");
		Objects.requireNonNull(gate, "gate");
		Objects.requireNonNull(listener, "listener");
		ChannelPromise promise = channel.newPromise();
		promise.addListener(f -> {
			if (f.isSuccess()) {
				listener.written();
			}
			else {
				listener.failed(f.cause() instanceof KVFerryException ? f.cause()
						: closedException("before the message was written", f.cause()));
			}
		});
		outbound.offer(message, gate, promise);
	}

	/**
	 * Queues a data or scatter block.
	 *
	 * @throws IllegalArgumentException when its header does not describe its payload (a negative field of a data
	 *         header)
	 */
	void block(Block block, SendListener listener) {
		Objects.requireNonNull(listener, "listener");
		String problem = problem(Objects.requireNonNull(block, "block"));
		if (problem != null) {
			throw new IllegalArgumentException(problem);
		}
		outbound.offer(block, listener);
	}

	private static String problem(Block block) {
		if (block instanceof ScatterBlock s) {
			return s.header().problem(s.payloadLength());
		}
		DataHeader h = ((DataBlock) block).header();
		if (h.chunkLen() < 0 || h.count() < 0 || h.dstOffset() < 0 || h.dstStride() < 0 || h.region() < 0) {
			return "data header : " + h + " (expected: no negative field)";
		}
		return null;
	}

	/** @return bytes handed to Netty and not yet written to the socket (0 once closed) */
	long pendingBytes() {
		ChannelOutboundBuffer buffer = channel.unsafe().outboundBuffer();
		return buffer == null ? 0 : buffer.totalPendingWriteBytes();
	}

	/** @return what a send fails with once the connection closed: its id, its peer, when and why */
	private KVFerryException closedException(String when, Throwable cause) {
		String reason = closeReason.get();
		return new KVFerryException("connection " + id + " to " + remote.get() + " closed " + when
				+ (reason == null ? "" : ": " + reason), cause);
	}
}
