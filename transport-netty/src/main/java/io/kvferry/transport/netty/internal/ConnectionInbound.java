package io.kvferry.transport.netty.internal;

import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.PayloadSink;
import io.kvferry.spi.ScatterHeader;
import io.kvferry.transport.netty.internal.shm.SameHostLink;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The inbound side of one connection, as its {@link KVFrameDecoder} reports it. Handshake frames go to the
 * {@link Handshake}, and the connection learns when it completed; engine traffic (messages, data blocks, same-host
 * frames) passes only after that, to the engine's handler or the same-host link. A {@code REJECT} before then fails
 * the handshake with the peer's reason; any other engine frame before then is a protocol error. Heartbeats are counted
 * and fired down the pipeline as {@link NettyKVConnection#HEARTBEAT_RECEIVED}.
 *
 * <p>Event-loop confined.
 */
final class ConnectionInbound implements KVFrameDecoder.Listener {

	private static final Logger log = LoggerFactory.getLogger(ConnectionInbound.class);

	private final NettyKVConnection connection;
	private final Handshake steps;
	private final OutboundQueue outbound;
	private final Heartbeats heartbeats;
	private final SameHostLink sameHost;
	private ChannelHandlerContext ctx;

	ConnectionInbound(NettyKVConnection connection, Handshake steps, OutboundQueue outbound, Heartbeats heartbeats,
			SameHostLink sameHost) {
		this.connection = connection;
		this.steps = steps;
		this.outbound = outbound;
		this.heartbeats = heartbeats;
		this.sameHost = sameHost;
	}

	/** The connection's place in the pipeline, once it was added there. */
	void attach(ChannelHandlerContext ctx) {
		this.ctx = ctx;
	}

	@Override
	public void onPreface(int version) {
		steps.onPreface();
		log.trace("{} peer preface ok (protocol version {})", connection.logPrefix(), version);
	}

	@Override
	public void onAuth(KVFrameCodec.Auth auth) {
		boolean complete = steps.onAuth(ctx, auth);
		outbound.maxFrameLength(auth.maxFrameLength());
		// Judged by the interval the peer writes at, not this side's: a peer with a longer one is not silent.
		ConnectionPipeline.idleAfter(ctx.channel(), auth.heartbeatInterval());
		if (complete) {
			connection.handshakeCompleted();
		}
	}

	@Override
	public void onAuthProof(byte[] proof) {
		if (steps.onAuthProof(ctx, proof)) {
			connection.handshakeCompleted();
		}
	}

	@Override
	public void onMessage(KVMessage message) {
		if (!steps.isDone() && message instanceof KVMessage.Reject r) {
			throw steps.refused(r.reason());
		}
		steps.requireDone(message.getClass().getSimpleName());
		connection.handler().onMessage(connection, message);
	}

	@Override
	public void onExtension(int type, ByteBuf body) {
		steps.requireDone(KVFrameCodec.typeName(type));
		sameHost.onFrame(ctx, type, body);
	}

	@Override
	public void onHeartbeat() {
		heartbeats.received();
		ctx.fireUserEventTriggered(NettyKVConnection.HEARTBEAT_RECEIVED);
	}

	/** A data block's header, from a {@code DATA} frame or a same-host ring slot: the engine's sink for its payload. */
	@Override
	public PayloadSink onData(DataHeader header) {
		steps.requireDone("DATA");
		return connection.handler().onData(connection, header);
	}

	/** A {@code DATA_SCATTER} frame's piece table: the engine's sinks for its pieces. */
	@Override
	public void onScatter(ScatterHeader header, PayloadSink[] sinks) {
		steps.requireDone("DATA_SCATTER");
		connection.handler().onScatter(connection, header, sinks);
	}

	@Override
	public void onFailure(Throwable cause) {
		connection.onFailure(cause);
	}
}
