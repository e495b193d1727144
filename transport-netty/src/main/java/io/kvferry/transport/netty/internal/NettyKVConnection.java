package io.kvferry.transport.netty.internal;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.time.Duration;
import java.util.Objects;
import java.util.Queue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
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
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelConfig;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
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
import io.netty.util.internal.PlatformDependent;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * One kvferry TCP connection: the {@link KVConnection} the engine uses and the last handler of the channel's pipeline
 * ({@link SslHandler} when TLS is on, {@link IdleStateHandler}, {@link KVFrameDecoder}, this).
 *
 * <p><b>Handshake.</b> On connect each side writes its preface and an {@code AUTH} frame; with a shared secret on both
 * sides each then proves it (see {@link KVFrameCodec} and {@link SharedSecret}). The handshake completes when the
 * peer's preface is valid and the peer's {@code AUTH} (and, with secrets, its proof) checked out; only then does the
 * accepting side ask the acceptor for a handler and the connecting side's {@code connect} succeed. A failure closes
 * the connection with a reason logged on each side, and fails {@link #handshakeFuture()} with a
 * {@link ProtocolException}. A handshake (TLS included) that has not completed within
 * {@link TransportSettings#handshakeTimeout()} is closed.
 *
 * <p><b>Outbound.</b> {@link #send} and {@link #sendData} may be called from any thread: they append to one FIFO
 * multi-producer queue and schedule a drain on the channel's event loop. The drain writes queued items only while the
 * channel is writable (its write buffer below the high watermark) and flushes once per pass; it resumes when the
 * channel turns writable again. A slow peer therefore holds back queued items (small descriptors), never unbounded
 * buffers. Data blocks are cut into frames of at most {@code maxFrameLength} payload bytes by {@link DataFrameCursor},
 * writability is checked before each frame, and the block's {@link SendGate} before each frame too (an
 * aborted room stops mid-block).
 *
 * <p><b>Inbound.</b> {@link KVFrameDecoder} reports to this connection, which forwards to the {@link ConnectionHandler}
 * on the event loop. The accepting side learns its handler from the acceptor once the peer's preface is valid.
 *
 * <p><b>Heartbeats.</b> The idle handler reports writer idleness after one interval (a heartbeat is written) and reader
 * idleness after two (the connection closes with "no heartbeat from ...").
 *
 * <p><b>Closing.</b> {@link #close(String)} is ordered: control messages queued before it are still written, queued
 * data blocks are dropped, and so are messages sent behind a room's gate (a Success that reports the room's data):
 * their data may have been among the dropped blocks. The channel closes after the flush, or after one heartbeat
 * interval if the peer does not take the bytes. Whoever closes first names the reason; {@link ConnectionHandler#onClose} is called exactly once, on
 * the event loop, after every other handler call, and only for connections whose handshake completed. Messages still
 * queued then fail their {@code send} result with a {@link KVFerryException} saying the connection closed.
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

	private static final Object CLOSE = new Object();

	/** Longest excerpt of a TLS error message in a close reason (Netty's can hex-dump a whole read). */
	private static final int MAX_TLS_DETAIL = 160;

	private final Channel channel;
	private final TransportSettings settings;
	private final String id;
	private final Function<KVConnection, ConnectionHandler> acceptor;
	private final Promise<NettyKVConnection> handshake;
	private final Queue<Object> queue = PlatformDependent.newMpscQueue();
	private final AtomicBoolean drainScheduled = new AtomicBoolean();
	private final AtomicReference<CloseReason> closeReason = new AtomicReference<>();
	private final AtomicLong queuedBytes = new AtomicLong();
	// close() was called: nothing new is queued, queued data is dropped, queued messages still go out.
	private final AtomicBoolean closing = new AtomicBoolean();
	private final Runnable drainTask = this::runDrain;
	private final SharedSecret.Role role;
	private final SharedSecret secret;

	private final Sinks.Empty<Void> onClose = Sinks.empty();

	private volatile ConnectionHandler handler;
	private volatile HostPort remote;
	// The peer's frame limit, learnt from its AUTH: what this side sends is cut to it.
	private volatile int peerMaxFrameLength;
	private volatile boolean closed;
	private volatile long heartbeatsReceived;
	private volatile long blocksDropped;
	// "[id, L:local - R:remote]" once active; read by log lines on any thread.
	private volatile String prefix;

	// Event-loop confined.
	private ChannelHandlerContext ctx;
	private boolean activated;
	private boolean closeNotified;
	private ProtocolException handshakeFailure;
	private DataFrameCursor current;
	private boolean prefaceReceived;
	private byte[] ownNonce;
	private KVFrameCodec.Auth peerAuth;
	private ScheduledFuture<?> handshakeTimer;

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
		this.role = acceptor != null ? SharedSecret.Role.ACCEPTING : SharedSecret.Role.CONNECTING;
		this.secret = settings.sharedSecret();
		this.peerMaxFrameLength = settings.maxFrameLength();
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
				.addLast("kvferry.idle", new IdleStateHandler(true, 2 * interval, interval, 0, TimeUnit.NANOSECONDS))
				.addLast("kvferry.decoder", decoder)
				.addLast("kvferry.connection", connection);
		if (tls == null) {
			// Large payloads are read straight into registered memory; under TLS the socket holds ciphertext.
			ChannelConfig config = channel.config();
			config.setRecvByteBufAllocator(new LandingRecvByteBufAllocator(config.getRecvByteBufAllocator(), decoder));
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
		if (closing.get() || closed) {
			promise.setFailure(closedException("before the message was queued"));
		}
		else {
			queue.offer(new Outbound(message, gate, promise));
			if (!scheduleDrain()) {
				promise.tryFailure(closedException("before the message was written"));
			}
		}
	}

	@Override
	public void sendData(DataBlock block) {
		Objects.requireNonNull(block, "block");
		DataHeader h = block.header();
		if (h.chunkLen() < 0 || h.count() < 0 || h.dstOffset() < 0 || h.dstStride() < 0 || h.region() < 0) {
			throw new IllegalArgumentException("data header : " + h + " (expected: no negative field)");
		}
		if (closing.get() || closed) {
			log.debug("{} dropping {}: connection closing", prefix, h);
			return;
		}
		queuedBytes.addAndGet(h.payloadLength());
		queue.offer(block);
		scheduleDrain();
	}

	@Override
	public boolean isActive() {
		return !closing.get() && !closed && channel.isActive();
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
		if (!closing.compareAndSet(false, true)) {
			return;
		}
		queue.offer(CLOSE);
		if (!scheduleDrain()) {
			channel.close();
		}
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
		return queuedBytes.get();
	}

	/** @return bytes handed to Netty and not yet written to the socket (0 once closed) */
	public long pendingOutboundBytes() {
		ChannelOutboundBuffer buffer = channel.unsafe().outboundBuffer();
		return buffer == null ? 0 : buffer.totalPendingWriteBytes();
	}

	/** @return heartbeats received so far */
	public long heartbeatsReceived() {
		return heartbeatsReceived;
	}

	/** @return data blocks dropped because their room was no longer sendable */
	public long blocksDropped() {
		return blocksDropped;
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

	// ---- outbound -----------------------------------------------------------------------------------------------

	/** @return false when the event loop refused the task (the transport is shutting down) */
	private boolean scheduleDrain() {
		if (drainScheduled.compareAndSet(false, true)) {
			try {
				channel.eventLoop().execute(drainTask);
			}
			catch (RejectedExecutionException e) {
				drainScheduled.set(false);
				return false;
			}
		}
		return true;
	}

	private void runDrain() {
		drainScheduled.set(false);
		drain();
	}

	private void drain() {
		if (ctx == null) {
			// Not in a pipeline yet: channelActive drains.
			return;
		}
		if (closed) {
			failQueued();
			return;
		}
		boolean wrote = false;
		try {
			for (;;) {
				if (current != null) {
					if (closing.get()) {
						dropCurrent();
						continue;
					}
					if (!channel.isWritable()) {
						return;
					}
					wrote |= writeDataFrame();
					continue;
				}
				if (!closing.get() && !channel.isWritable()) {
					return;
				}
				Object item = queue.poll();
				if (item == null) {
					return;
				}
				if (item instanceof Outbound m) {
					wrote |= writeMessage(m);
				}
				else if (item instanceof DataBlock b) {
					if (closing.get()) {
						queuedBytes.addAndGet(-b.header().payloadLength());
					}
					else {
						current = new DataFrameCursor(b, peerMaxFrameLength);
					}
				}
				else {
					wrote = false;
					closeAfterFlush();
					return;
				}
			}
		}
		finally {
			if (wrote) {
				ctx.flush();
			}
		}
	}

	private boolean writeMessage(Outbound m) {
		boolean gated = m.gate != SendGate.OPEN;
		if (gated && closing.get()) {
			// Closing drops the data still queued, so a message that reports a room's data complete goes with it.
			m.promise.tryFailure(closedException("before " + m.message + " was written (the room's queued data was "
					+ "dropped with the close)"));
			return false;
		}
		if (gated && !isOpen(m.gate)) {
			// A Success must not outrun the data it reports: they were dropped, so it is too.
			m.promise.tryFailure(new KVFerryException("the room of " + m.message + " stopped before it was written"));
			return false;
		}
		ByteBuf frame;
		try {
			frame = KVFrameCodec.encode(ctx.alloc(), m.message, peerMaxFrameLength);
		}
		catch (RuntimeException e) {
			m.promise.tryFailure(e);
			return false;
		}
		ctx.write(frame, m.promise);
		return true;
	}

	private boolean writeDataFrame() {
		DataFrameCursor cursor = current;
		if (!isOpen(cursor.block().gate())) {
			blocksDropped++;
			dropCurrent();
			return false;
		}
		DataHeader frame = cursor.next();
		if (!cursor.hasNext()) {
			current = null;
		}
		ctx.write(KVFrameCodec.encodeDataHeader(ctx.alloc(), frame), ctx.voidPromise());
		ByteBuf payload = cursor.payload(ctx.alloc());
		if (payload != null) {
			ctx.write(payload, ctx.voidPromise());
		}
		queuedBytes.addAndGet(-frame.payloadLength());
		return true;
	}

	private boolean isOpen(SendGate gate) {
		try {
			return gate.isOpen();
		}
		catch (RuntimeException e) {
			log.error("{} a send gate failed; dropping what it guards", prefix, e);
			return false;
		}
	}

	private void dropCurrent() {
		queuedBytes.addAndGet(-current.remainingBytes());
		current = null;
	}

	private void closeAfterFlush() {
		ChannelFuture flushed = ctx.writeAndFlush(Unpooled.EMPTY_BUFFER);
		flushed.addListener(ChannelFutureListener.CLOSE);
		if (!flushed.isDone()) {
			// The peer does not take the bytes: give it one interval, then close anyway.
			ctx.executor().schedule(() -> {
				channel.close();
			}, settings.heartbeatInterval().toNanos(), TimeUnit.NANOSECONDS);
		}
	}

	private void failQueued() {
		if (current != null) {
			dropCurrent();
		}
		Object item;
		while ((item = queue.poll()) != null) {
			if (item instanceof Outbound m) {
				m.promise.tryFailure(closedException("before the message was written"));
			}
			else if (item instanceof DataBlock b) {
				queuedBytes.addAndGet(-b.header().payloadLength());
			}
		}
	}

	private KVFerryException closedException(String when) {
		return closedException(when, null);
	}

	private KVFerryException closedException(String when, Throwable cause) {
		String reason = closeReason();
		return new KVFerryException("connection " + id + " to " + remoteAddress() + " closed " + when
				+ (reason == null ? "" : ": " + reason), cause);
	}

	// ---- inbound (KVFrameDecoder.Listener) ---------------------------------------------------------------------

	@Override
	public void onPreface(int version) {
		prefaceReceived = true;
		log.trace("{} peer preface ok (protocol version {})", prefix, version);
	}

	@Override
	public void onAuth(KVFrameCodec.Auth auth) {
		if (peerAuth != null) {
			throw new ProtocolException("unexpected second AUTH frame");
		}
		peerAuth = auth;
		peerMaxFrameLength = auth.maxFrameLength();
		if (secret == null) {
			if (auth.hasSecret()) {
				throw new ProtocolException("shared secret mismatch: the peer requires a shared secret and none is "
						+ "configured here (configure the same sharedSecret on both sides)");
			}
			completeHandshake();
			return;
		}
		if (!auth.hasSecret()) {
			throw new ProtocolException("peer did not prove the shared secret: it has none configured (configure the "
					+ "same sharedSecret on both sides)");
		}
		byte[] proof = secret.proof(role, auth.nonce(), ownNonce);
		ctx.writeAndFlush(KVFrameCodec.encodeAuthProof(ctx.alloc(), proof));
	}

	@Override
	public void onAuthProof(byte[] proof) {
		if (secret == null || peerAuth == null || handshake.isDone()) {
			throw new ProtocolException("unexpected AUTH_PROOF frame ("
					+ (secret == null ? "no shared secret is configured here"
							: peerAuth == null ? "before the peer's AUTH" : "after the handshake")
					+ ")");
		}
		if (!secret.verify(role.peer(), proof, ownNonce, peerAuth.nonce())) {
			throw new ProtocolException("shared secret mismatch: the peer's proof does not verify (the two sides have "
					+ "different secrets)");
		}
		completeHandshake();
	}

	private void completeHandshake() {
		if (!prefaceReceived) {
			// The decoder reports AUTH only after a valid preface; kept as a guard for the ordering it relies on.
			throw new ProtocolException("AUTH before the preface");
		}
		if (acceptor != null) {
			ConnectionHandler h = acceptor.apply(this);
			if (h == null) {
				throw new IllegalStateException("the acceptor returned no handler");
			}
			handler = h;
		}
		if (handshakeTimer != null) {
			handshakeTimer.cancel(false);
			handshakeTimer = null;
		}
		log.debug("{} handshake complete (protocol version {}, {}{})", prefix, KVMessage.PROTOCOL_VERSION,
				secret != null ? "shared secret verified" : "no shared secret",
				channel.pipeline().get(SslHandler.class) != null ? ", TLS" : "");
		handshake.trySuccess(this);
	}

	/** Rejects engine traffic from a peer that has not completed the handshake. */
	private void requireHandshake(String what) {
		if (handshake.isDone()) {
			return;
		}
		throw new ProtocolException(secret != null
				? "peer did not prove the shared secret: " + what + " arrived before the handshake completed"
				: "handshake incomplete: " + what + " arrived before the peer's AUTH frame");
	}

	@Override
	public void onMessage(KVMessage message) {
		requireHandshake(message.getClass().getSimpleName());
		handler.onMessage(this, message);
	}

	@Override
	public void onHeartbeat() {
		heartbeatsReceived++;
		ctx.fireUserEventTriggered(HEARTBEAT_RECEIVED);
	}

	@Override
	public PayloadSink onData(DataHeader header) {
		requireHandshake("DATA");
		return handler.onData(this, header);
	}

	@Override
	public void onFailure(Throwable cause) {
		boolean protocol = cause instanceof ProtocolException;
		String reason = protocol ? cause.getMessage() : "handler failed: " + cause;
		if (!handshake.isDone() && protocol) {
			handshakeFailure = (ProtocolException) cause;
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
			ownNonce = secret != null ? secret.newNonce() : new byte[SharedSecret.NONCE_LENGTH];
			ctx.write(KVFrameCodec.encodePreface(ctx.alloc(), KVMessage.PROTOCOL_VERSION));
			ctx.writeAndFlush(KVFrameCodec.encodeAuth(ctx.alloc(),
					new KVFrameCodec.Auth(secret != null, ownNonce, settings.maxFrameLength())));
			Duration timeout = settings.handshakeTimeout();
			handshakeTimer = ctx.executor().schedule(() -> {
				if (!handshake.isDone()) {
					String reason = "handshake not completed within " + TransportSettings.format(timeout);
					if (closeReason.compareAndSet(null, new CloseReason(CloseReason.Kind.PROTOCOL, reason))) {
						log.warn("{} closing: {}", prefix, reason);
					}
					channel.close();
				}
			}, timeout.toNanos(), TimeUnit.NANOSECONDS);
			drain();
		}
		ctx.fireChannelActive();
	}

	@Override
	public void channelWritabilityChanged(ChannelHandlerContext ctx) {
		if (channel.isWritable()) {
			scheduleDrain();
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
					handshakeFailure = failure;
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
			else if (e.state() == IdleState.WRITER_IDLE && !closed) {
				ctx.writeAndFlush(KVFrameCodec.encodeHeartbeat(ctx.alloc()));
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

	@Override
	public void channelInactive(ChannelHandlerContext ctx) {
		closed = true;
		if (handshakeTimer != null) {
			handshakeTimer.cancel(false);
		}
		closeReason.compareAndSet(null, new CloseReason(CloseReason.Kind.PEER_CLOSED, "connection closed by peer "
				+ remoteAddress() + (prefaceReceived ? ""
						: " before it sent a kvferry preface" + (settings.tls() == null
								? " (a listener that requires TLS closes plain connections this way)"
								: ""))));
		CloseReason reason = closeReason.get();
		log.debug("{} closed: {}", prefix, reason);
		failQueued();
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
		ctx.fireChannelInactive();
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

	/** A queued control message, the gate it is written behind, and the promise its listener observes. */
	private record Outbound(KVMessage message, SendGate gate, ChannelPromise promise) {
	}
}
