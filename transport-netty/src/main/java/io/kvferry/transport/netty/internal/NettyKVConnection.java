package io.kvferry.transport.netty.internal;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;

import javax.net.ssl.SSLException;

import io.kvferry.HostPort;
import io.kvferry.KVFerryException;
import io.kvferry.ProtocolException;
import io.kvferry.spi.CloseReason;
import io.kvferry.spi.ConnectionHandler;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.PayloadSink;
import io.kvferry.spi.SendGate;
import io.kvferry.spi.SendListener;
import io.kvferry.transport.netty.internal.shm.SameHostLink;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelConfig;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.unix.UnixChannel;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.DecoderException;
import io.netty.handler.ssl.NotSslRecordException;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.ssl.SslHandshakeCompletionEvent;
import io.netty.handler.timeout.IdleState;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.handler.timeout.IdleStateHandler;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;
import io.netty.util.concurrent.ScheduledFuture;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * One kvferry TCP connection: the {@link KVConnection} the engine uses and the last handler of the channel's pipeline
 * ({@link SslHandler} when TLS is on, {@link IdleStateHandler}, {@link KVFrameDecoder}, this).
 *
 * <p>It joins three parts: the {@link Handshake} (preface, {@code AUTH}, shared-secret proofs, timeout), the
 * {@link OutboundQueue} (any thread sends; writes drain on the event loop only while the channel is writable; ordered
 * close) and the inbound side: {@link KVFrameDecoder} reports to this connection, which forwards to the
 * {@link ConnectionHandler} on the event loop once the handshake completed. Only then does the accepting side ask the
 * acceptor for a handler and the connecting side's {@code connect} succeed. A handshake failure closes the connection
 * with a reason logged on each side (the accepting side sends its reason in a {@code REJECT} first), and fails
 * {@link #handshakeFuture()} with a {@link ProtocolException}.
 *
 * <p><b>Heartbeats.</b> The idle handler reports writer idleness after one interval (a heartbeat is written) and reader
 * idleness after two (the connection closes with "no heartbeat from ...").
 *
 * <p><b>Closing.</b> {@link #close(String)} is ordered as {@link OutboundQueue} describes; the channel closes after
 * the flush, or after one heartbeat interval if the peer does not take the bytes. Whoever closes first names the
 * reason; {@link ConnectionHandler#onClose} is called exactly once, on the event loop, after every other handler call,
 * and only for connections whose handshake completed. Messages still queued then fail their {@code send} result with
 * a {@link KVFerryException} saying the connection closed.
 */
public final class NettyKVConnection extends ChannelInboundHandlerAdapter implements KVConnection,
		KVFrameDecoder.Listener {

	/** Fired down the pipeline (after this handler) for each heartbeat received; for diagnostics and tests. */
	public static final Object HEARTBEAT_RECEIVED = new Object() {
		@Override
		public String toString() {
			return "HEARTBEAT_RECEIVED";
		}
	};

	private static final Logger log = LoggerFactory.getLogger(NettyKVConnection.class);

	/** Longest excerpt of a TLS error message in a close reason (Netty's can hex-dump a whole read). */
	private static final int MAX_TLS_DETAIL = 160;

	private final Channel channel;
	private final TransportSettings settings;
	private final String id;
	private final Function<KVConnection, ConnectionHandler> acceptor;
	private final Promise<NettyKVConnection> handshake;
	private final AtomicReference<CloseReason> closeReason = new AtomicReference<>();
	private final OutboundQueue outbound;
	private final SameHostLink sameHost;

	private final Sinks.Empty<Void> onClose = Sinks.empty();

	private volatile ConnectionHandler handler;
	private volatile HostPort remote;
	private volatile boolean closed;
	// What channelInactive does was done (on the loop, or once the loop ended: see loopEnded).
	private volatile boolean inactiveDone;
	private volatile long heartbeatsReceived;
	// "[id, L:local - R:remote]" once active; read by log lines on any thread.
	private volatile String prefix;

	// Event-loop confined.
	private final Handshake steps;
	private ChannelHandlerContext ctx;
	private boolean activated;
	private boolean closeNotified;

	/**
	 * @param channel the channel, registered with its event loop
	 * @param settings the transport's settings
	 * @param handler the engine's handler (connecting side), or {@code null} when {@code acceptor} gives it
	 * @param acceptor gives the handler once the handshake completes (accepting side), or {@code null}
	 * @param remote the peer's address as asked for, or {@code null} to take it from the channel
	 */
	public NettyKVConnection(Channel channel, TransportSettings settings, ConnectionHandler handler,
			Function<KVConnection, ConnectionHandler> acceptor, HostPort remote) {
		if ((handler == null) == (acceptor == null)) {
			throw new IllegalArgumentException("exactly one of handler and acceptor (expected: one non-null)");
		}
		this.channel = channel;
		this.settings = settings;
		this.handler = handler;
		this.acceptor = acceptor;
		this.remote = remote;
		this.id = channel.id().asShortText();
		this.handshake = channel.eventLoop().newPromise();
		this.prefix = "[" + id + "]";
		this.steps = new Handshake(settings,
				acceptor != null ? SharedSecret.Role.ACCEPTING : SharedSecret.Role.CONNECTING);
		this.outbound = new OutboundQueue(channel, settings.maxFrameLength(), settings.heartbeatInterval(),
				this::closedException, cause -> {
					onFailure(cause);
					channel.close();
				});
		this.sameHost = new SameHostLink(channel, settings, acceptor == null, outbound::sameHost, outbound::writable,
				this::onData, () -> prefix);
		// Run after the close's own task, in which Netty fails and releases what was still queued for the socket.
		channel.closeFuture().addListener(f -> channel.eventLoop().execute(onClose::tryEmitEmpty));
	}

	/**
	 * Installs the kvferry handlers on a fresh channel: TLS first when the settings have it (the server context for an
	 * accepted channel, the client context, with {@code remote} for SNI and host name checks, for a connecting one).
	 *
	 * @return the connection, the pipeline's last handler
	 */
	public static NettyKVConnection install(Channel channel, TransportSettings settings, ConnectionHandler handler,
			Function<KVConnection, ConnectionHandler> acceptor, HostPort remote) {
		NettyKVConnection connection = new NettyKVConnection(channel, settings, handler, acceptor, remote);
		long interval = settings.heartbeatInterval().toNanos();
		TransportSettings.Tls tls = settings.tls();
		if (tls != null) {
			SslHandler ssl = acceptor != null || remote == null ? tls.server().newHandler(channel.alloc())
					: tls.client().newHandler(channel.alloc(), remote.host(), remote.port());
			ssl.setHandshakeTimeoutMillis(settings.handshakeTimeout().toMillis());
			channel.pipeline().addLast("kvferry.tls", ssl);
		}
		KVFrameDecoder decoder = new KVFrameDecoder(KVMessage.PROTOCOL_VERSION, settings.maxFrameLength(), connection);
		channel.pipeline()
				// Reader idle only: a writer idle time makes the handler swap every write's void promise for a new
				// one with a listener, two per data frame; heartbeats go out from the connection's own tick instead.
				.addLast("kvferry.idle", new IdleStateHandler(2 * interval, 0, 0, TimeUnit.NANOSECONDS))
				.addLast("kvferry.decoder", decoder)
				.addLast("kvferry.connection", connection);
		if (tls == null) {
			// Large payloads are read straight into registered memory; under TLS the socket holds ciphertext.
			ChannelConfig config = channel.config();
			config.setRecvByteBufAllocator(new LandingRecvByteBufAllocator(config.getRecvByteBufAllocator(), decoder));
			decoder.lowWater(ReceiveLowWater.of(channel));
		}
		return connection;
	}

	// ---- KVConnection -------------------------------------------------------------------------------------------

	@Override
	public String id() {
		return id;
	}

	@Override
	public HostPort remoteAddress() {
		HostPort r = remote;
		if (r == null) {
			r = toHostPort(channel.remoteAddress());
			remote = r;
		}
		return r;
	}

	@Override
	public void send(KVMessage message, SendGate gate, SendListener listener) {
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

	@Override
	public void sendData(DataBlock block) {
		Objects.requireNonNull(block, "block");
		DataHeader h = block.header();
		if (h.chunkLen() < 0 || h.count() < 0 || h.dstOffset() < 0 || h.dstStride() < 0 || h.region() < 0) {
			throw new IllegalArgumentException("data header : " + h + " (expected: no negative field)");
		}
		outbound.offer(block);
	}

	@Override
	public boolean isActive() {
		return !outbound.isClosing() && channel.isActive();
	}

	@Override
	public Mono<Void> onClose() {
		return onClose.asMono();
	}

	@Override
	public void close(String reason) {
		Objects.requireNonNull(reason, "reason");
		close(new CloseReason(CloseReason.Kind.LOCAL, reason));
	}

	/** Closes in order, as {@link #close(String)}, with a reason of any kind (a disposed transport's). */
	public void close(CloseReason reason) {
		closeReason.compareAndSet(null, reason);
		outbound.close();
	}

	// ---- diagnostics --------------------------------------------------------------------------------------------

	/** @return the channel (for diagnostics and tests) */
	public Channel channel() {
		return channel;
	}

	/** @return completes with this connection when the peer's preface was valid (and the handler known) */
	public Future<NettyKVConnection> handshakeFuture() {
		return handshake;
	}

	/** @return payload bytes of data blocks queued but not yet handed to Netty */
	public long queuedBytes() {
		return outbound.queuedBytes();
	}

	/** @return bytes handed to Netty and not yet written to the socket (0 once closed) */
	public long pendingOutboundBytes() {
		ChannelOutboundBuffer buffer = channel.unsafe().outboundBuffer();
		return buffer == null ? 0 : buffer.totalPendingWriteBytes();
	}

	/** @return whether KV data moves through a same-host shared-memory ring on this connection (read on its loop) */
	public boolean sameHostActive() {
		return sameHost.active();
	}

	/** @return heartbeats received so far */
	public long heartbeatsReceived() {
		return heartbeatsReceived;
	}

	/** @return data blocks dropped because their room was no longer sendable */
	public long blocksDropped() {
		return outbound.blocksDropped();
	}

	/** @return the reason the connection closed or is closing, or {@code null} while open */
	public String closeReason() {
		CloseReason reason = closeReason.get();
		return reason == null ? null : reason.message();
	}

	@Override
	public String toString() {
		return "NettyKVConnection" + prefix;
	}

	// ---- inbound (KVFrameDecoder.Listener) ---------------------------------------------------------------------

	private KVFerryException closedException(String when, Throwable cause) {
		String reason = closeReason();
		return new KVFerryException("connection " + id + " to " + remoteAddress() + " closed " + when
				+ (reason == null ? "" : ": " + reason), cause);
	}

	@Override
	public void onPreface(int version) {
		steps.onPreface();
		log.trace("{} peer preface ok (protocol version {})", prefix, version);
	}

	@Override
	public void onAuth(KVFrameCodec.Auth auth) {
		boolean complete = steps.onAuth(ctx, auth);
		outbound.maxFrameLength(auth.maxFrameLength());
		if (complete) {
			completeHandshake();
		}
	}

	@Override
	public void onAuthProof(byte[] proof) {
		if (steps.onAuthProof(ctx, proof)) {
			completeHandshake();
		}
	}

	private void completeHandshake() {
		// Decode offers its same-host ring first, so that connect() returns with the data path settled.
		sameHost.handshakeDone(ctx, this::finishHandshake);
	}

	private void finishHandshake() {
		if (acceptor != null) {
			ConnectionHandler h = acceptor.apply(this);
			if (h == null) {
				throw new IllegalStateException("the acceptor returned no handler");
			}
			handler = h;
		}
		log.debug("{} handshake complete (protocol version {}, {}{}{})", prefix, KVMessage.PROTOCOL_VERSION,
				settings.sharedSecret() != null ? "shared secret verified" : "no shared secret",
				channel.pipeline().get(SslHandler.class) != null ? ", TLS" : "",
				sameHost.active() ? ", same-host ring" : "");
		handshake.trySuccess(this);
	}

	@Override
	public void onMessage(KVMessage message) {
		if (!steps.isDone() && message instanceof KVMessage.Reject r) {
			throw steps.refused(r.reason());
		}
		steps.requireDone(message.getClass().getSimpleName());
		handler.onMessage(this, message);
	}

	@Override
	public void onExtension(int type, ByteBuf body) {
		steps.requireDone(KVFrameCodec.typeName(type));
		sameHost.onFrame(ctx, type, body);
	}

	@Override
	public void onHeartbeat() {
		heartbeatsReceived++;
		ctx.fireUserEventTriggered(HEARTBEAT_RECEIVED);
	}

	@Override
	public PayloadSink onData(DataHeader header) {
		steps.requireDone("DATA");
		return handler.onData(this, header);
	}

	@Override
	public void onFailure(Throwable cause) {
		boolean protocol = cause instanceof ProtocolException;
		String reason = protocol ? cause.getMessage() : "handler failed: " + cause;
		if (!handshake.isDone() && protocol) {
			steps.failed((ProtocolException) cause);
			tellRefused(reason);
		}
		if (!closeReason.compareAndSet(null, new CloseReason(protocol ? CloseReason.Kind.PROTOCOL
				: CloseReason.Kind.IO, reason))) {
			log.debug("{} after close ({}): {}", prefix, closeReason(), reason);
		}
		else if (protocol) {
			log.warn("{} closing: {}", prefix, reason);
		}
		else {
			log.error("{} closing: {}", prefix, reason, cause);
		}
	}

	/**
	 * The accepting side says why it refuses a kvferry peer during the handshake, before the decoder closes the
	 * channel: the connecting side cannot see that judgement otherwise, since this side proves nothing to a peer it
	 * refuses. A handshake reason holds no secret: what the peer sent, and this listener's own names.
	 */
	private void tellRefused(String reason) {
		if (steps.role() != SharedSecret.Role.ACCEPTING || steps.isDone() || !steps.prefaceReceived() || ctx == null
				|| !channel.isActive()) {
			return;
		}
		int limit = steps.peerMaxFrameLength();
		// At most 3 UTF-8 bytes a char, after the string's 4-byte length: always within the peer's frame limit.
		String text = reason.length() > (limit - 4) / 3 ? reason.substring(0, (limit - 4) / 3) : reason;
		ctx.writeAndFlush(KVFrameCodec.encode(ctx.alloc(), new KVMessage.Reject(text), limit));
	}

	// ---- channel events -----------------------------------------------------------------------------------------

	@Override
	public void handlerAdded(ChannelHandlerContext ctx) {
		this.ctx = ctx;
	}

	@Override
	public void channelActive(ChannelHandlerContext ctx) {
		if (!activated) {
			activated = true;
			if (remote == null) {
				remote = toHostPort(channel.remoteAddress());
			}
			prefix = "[" + id + ", L:" + channel.localAddress() + " - R:" + channel.remoteAddress() + "]";
			log.debug("{} open", prefix);
			steps.start(ctx, remote, () -> {
				String reason = "handshake not completed within " + TransportSettings.format(steps.timeout());
				if (closeReason.compareAndSet(null, new CloseReason(CloseReason.Kind.PROTOCOL, reason))) {
					log.warn("{} closing: {}", prefix, reason);
				}
				channel.close();
			});
			outbound.start(ctx, prefix);
			startHeartbeats(ctx);
		}
		ctx.fireChannelActive();
	}

	@Override
	public void channelWritabilityChanged(ChannelHandlerContext ctx) {
		if (channel.isWritable()) {
			outbound.writable();
		}
		ctx.fireChannelWritabilityChanged();
	}

	@Override
	public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
		if (evt instanceof SslHandshakeCompletionEvent e) {
			if (e.isSuccess()) {
				SslHandler ssl = ctx.pipeline().get(SslHandler.class);
				log.debug("{} TLS established ({}, {})", prefix, ssl.engine().getSession().getProtocol(),
						ssl.engine().getSession().getCipherSuite());
			}
			else {
				ProtocolException failure = new ProtocolException("TLS handshake failed: " + describeTls(e.cause()),
						e.cause());
				if (!handshake.isDone()) {
					steps.failed(failure);
				}
				if (closeReason.compareAndSet(null, new CloseReason(CloseReason.Kind.PROTOCOL, failure.getMessage()))) {
					log.warn("{} closing: {}", prefix, failure.getMessage());
				}
				ctx.close();
			}
			return;
		}
		if (evt instanceof IdleStateEvent e) {
			if (e.state() == IdleState.READER_IDLE) {
				String reason = "no heartbeat from " + remoteAddress() + " for 2 intervals ("
						+ TransportSettings.format(settings.deadPeerTimeout()) + ")";
				if (closeReason.compareAndSet(null, new CloseReason(CloseReason.Kind.SILENT_PEER, reason))) {
					log.warn("{} closing: {}", prefix, reason);
				}
				ctx.close();
			}
			return;
		}
		ctx.fireUserEventTriggered(evt);
	}

	@Override
	public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
		Throwable tls = cause instanceof DecoderException && cause.getCause() instanceof SSLException
				? cause.getCause() : cause instanceof SSLException ? cause : null;
		String reason = tls != null ? "TLS error: " + describeTls(tls)
				: cause instanceof IOException ? "I/O error: " + cause.getMessage() : "pipeline error: " + cause;
		if (closeReason.compareAndSet(null, new CloseReason(tls != null ? CloseReason.Kind.PROTOCOL
				: CloseReason.Kind.IO, reason))) {
			if (tls != null) {
				log.warn("{} closing: {}", prefix, reason);
			}
			else if (cause instanceof IOException) {
				log.debug("{} closing: {}", prefix, reason);
			}
			else {
				log.warn("{} closing: {}", prefix, reason, cause);
			}
		}
		ctx.close();
	}

	/**
	 * Writes a heartbeat whenever a whole interval passed without a write: ticks every half interval, and a tick
	 * that finds no write since the one before sends one (and counts it as a write), so the peer never goes two
	 * intervals (its dead-peer timeout) without a frame from here.
	 */
	private void startHeartbeats(ChannelHandlerContext ctx) {
		long half = Math.max(1, settings.heartbeatInterval().toNanos() / 2);
		// The preface just went out.
		outbound.written();
		ScheduledFuture<?> tick = ctx.executor().scheduleAtFixedRate(() -> {
			if (!closed && !outbound.takeWritten()) {
				ctx.writeAndFlush(KVFrameCodec.encodeHeartbeat(ctx.alloc()));
				outbound.written();
			}
		}, half, half, TimeUnit.NANOSECONDS);
		channel.closeFuture().addListener(f -> tick.cancel(false));
	}

	@Override
	public void channelInactive(ChannelHandlerContext ctx) {
		inactive();
		ctx.fireChannelInactive();
	}

	/**
	 * The event loop ended and left this channel open, or closed it without firing {@code channelInactive} (a loop
	 * that shuts down while a half-closed channel waits for its peer's end refuses the task that would fire it): the
	 * socket is closed and what {@code channelInactive} does is done from the calling thread, as no loop runs any more.
	 */
	void loopEnded() {
		if (channel.isOpen() && channel instanceof UnixChannel unix) {
			// Channel.close needs the loop; the descriptor can be closed without it.
			try {
				unix.fd().close();
			}
			catch (IOException e) {
				log.debug("{} closing the socket after its event loop ended: {}", prefix, e.toString());
			}
		}
		inactive();
	}

	private void inactive() {
		if (inactiveDone) {
			return;
		}
		inactiveDone = true;
		closed = true;
		steps.stop();
		closeReason.compareAndSet(null, new CloseReason(CloseReason.Kind.PEER_CLOSED, "connection closed by peer "
				+ remoteAddress() + (steps.prefaceReceived() ? ""
						: " before it sent a kvferry preface" + (settings.tls() == null
								? " (a listener that requires TLS closes plain connections this way)"
								: ""))));
		CloseReason reason = closeReason.get();
		log.debug("{} closed: {}", prefix, reason);
		outbound.closed();
		sameHost.close();
		ProtocolException handshakeFailure = steps.failure();
		if (!handshake.isDone()) {
			handshake.tryFailure(handshakeFailure != null
					? new ProtocolException("handshake with " + remoteAddress() + " failed: "
							+ handshakeFailure.getMessage(), handshakeFailure)
					: new KVFerryException("connection to " + remoteAddress()
							+ " closed before the handshake completed: " + reason));
		}
		else if (!closeNotified && handler != null) {
			closeNotified = true;
			try {
				handler.onClose(this, reason);
			}
			catch (RuntimeException e) {
				log.error("{} onClose failed", prefix, e);
			}
		}
	}

	private static String describeTls(Throwable cause) {
		Throwable c = cause instanceof DecoderException && cause.getCause() != null ? cause.getCause() : cause;
		String message = String.valueOf(c.getMessage());
		if (message.length() > MAX_TLS_DETAIL) {
			message = message.substring(0, MAX_TLS_DETAIL) + "...";
		}
		if (c instanceof NotSslRecordException) {
			return "the peer does not speak TLS (" + message + ")";
		}
		return c.getClass().getSimpleName() + ": " + message;
	}

	private static HostPort toHostPort(SocketAddress address) {
		if (address instanceof InetSocketAddress inet) {
			return new HostPort(inet.getHostString(), inet.getPort());
		}
		return new HostPort(String.valueOf(address), 0);
	}
}
