package io.kvferry.transport.netty.internal;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import io.kvferry.HostPort;
import io.kvferry.spi.KVMessage;
import io.netty.channel.Channel;
import io.netty.channel.ChannelConfig;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.timeout.IdleStateHandler;

/**
 * The handlers of a kvferry channel, in order: {@link SslHandler} when TLS is on, {@link FrameLogger} when frame
 * logging is on, {@link IdleStateHandler} (reader idleness only), {@link KVFrameDecoder}, and the
 * {@link NettyKVConnection} last. Without TLS the channel's reads of large payloads land straight in registered memory.
 */
final class ConnectionPipeline {

	private static final String IDLE = "kvferry.idle";

	private ConnectionPipeline() {
	}

	/**
	 * Closes the connection after two of the peer's heartbeat intervals without input, once the peer announced its
	 * interval in its {@code AUTH}: until then, after two of this side's. The idle clock starts again here.
	 */
	static void idleAfter(Channel channel, Duration peerInterval) {
		channel.pipeline().replace(IDLE, IDLE, idle(peerInterval));
	}

	private static IdleStateHandler idle(Duration interval) {
		return new IdleStateHandler(interval.toNanos() * 2, 0, 0, TimeUnit.NANOSECONDS);
	}

	/**
	 * @param connection the connection, not yet in the pipeline
	 * @param inbound what the frame decoder reports to
	 * @param dialled what the connecting side dialled, for SNI and host name checks; {@code null} on the accepting
	 *        side, which uses the server context
	 */
	static void install(Channel channel, TransportSettings settings, NettyKVConnection connection,
			KVFrameDecoder.Listener inbound, HostPort dialled) {
		TransportSettings.Tls tls = settings.tls();
		if (tls != null) {
			SslHandler ssl = dialled == null ? tls.server().newHandler(channel.alloc())
					: tls.client().newHandler(channel.alloc(), dialled.host(), dialled.port());
			ssl.setHandshakeTimeoutMillis(settings.handshakeTimeout().toMillis());
			channel.pipeline().addLast("kvferry.tls", ssl);
		}
		FrameLogger.install(channel, connection.id());
		KVFrameDecoder decoder = new KVFrameDecoder(KVMessage.PROTOCOL_VERSION, settings.maxFrameLength(), inbound);
		channel.pipeline()
				// Reader idle only: a writer idle time makes the handler swap every write's void promise for a new
				// one with a listener, two per data frame; heartbeats go out from the connection's own tick instead.
				.addLast(IDLE, idle(settings.heartbeatInterval()))
				.addLast("kvferry.decoder", decoder)
				.addLast("kvferry.connection", connection);
		if (tls == null) {
			// Large payloads are read straight into registered memory; under TLS the socket holds ciphertext.
			ChannelConfig config = channel.config();
			config.setRecvByteBufAllocator(new LandingRecvByteBufAllocator(config.getRecvByteBufAllocator(), decoder));
			decoder.lowWater(ReceiveLowWater.of(channel));
			decoder.scatterLanding(channel instanceof LandingNioSocketChannel);
		}
	}
}
