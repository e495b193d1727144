package io.kvferry.transport.netty.internal;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;

import io.kvferry.HostPort;
import io.kvferry.KVFerryException;
import io.kvferry.ProtocolException;
import io.kvferry.RoomPath;
import io.kvferry.spi.Block;
import io.kvferry.spi.CloseReason;
import io.kvferry.spi.ConnectionHandler;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.PayloadSink;
import io.kvferry.spi.SendGate;
import io.kvferry.spi.SendListener;
import io.kvferry.transport.netty.internal.shm.SameHostLink;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.unix.UnixChannel;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.ssl.SslHandshakeCompletionEvent;
import io.netty.handler.timeout.IdleState;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.handler.timeout.IdleStateHandler;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * One kvferry TCP connection: the {@link KVConnection} the engine uses and the last handler of the channel's pipeline
 * ({@link SslHandler} when TLS is on, {@link IdleStateHandler}, {@link KVFrameDecoder}, this).
 *
 * <p>It joins the parts: the {@link Handshake} (preface, {@code AUTH}, shared-secret proofs, timeout), the
 * {@link ConnectionSends} and their {@link OutboundQueue} (any thread sends; writes drain on the event loop only while
 * the channel is writable; ordered close) and the {@link ConnectionInbound}, which {@link KVFrameDecoder} reports to
 * and which forwards to the {@link ConnectionHandler} on the event loop once the handshake completed. Only then does
 * the accepting side ask the acceptor for a handler and the connecting side's {@code connect} succeed. A handshake
 * failure closes the connection with a reason logged on each side (the accepting side sends its reason in a
 * {@code REJECT} first), and fails {@link #handshakeFuture()} with a {@link ProtocolException}.
 * {@link ConnectionPipeline} lays the handlers out.
 *
 * <p><b>Heartbeats.</b> {@link Heartbeats} writes one whenever an interval passed without a write; the idle handler
 * reports reader idleness after two of the peer's intervals, as its {@code AUTH} announced them (two of this side's
 * before it arrived), and the connection closes with "no heartbeat from ...".
 *
 * <p><b>Closing.</b> {@link #close(String)} is ordered as {@link OutboundQueue} describes; the channel closes after
 * the flush, or after one heartbeat interval if the peer does not take the bytes. Whoever closes first names the
 * reason ({@link CloseReasons} words each cause); {@link ConnectionHandler#onClose} is called exactly once, on the
 * event loop, after every other handler call, and only for connections whose handshake completed. Messages still
 * queued then fail their {@code send} result with a {@link KVFerryException} saying the connection closed.
 */
public final class NettyKVConnection extends ChannelInboundHandlerAdapter implements KVConnection {

	/** Fired down the pipeline (after this handler) for each heartbeat received; for diagnostics and tests. */
	public static final Object HEARTBEAT_RECEIVED = new Object() {
		@Override
		public String toString() {
			return "HEARTBEAT_RECEIVED";
		}
	};

	private static final Logger log = LoggerFactory.getLogger(NettyKVConnection.class);

	private final Channel channel;
	private final TransportSettings settings;
	private final String id;
	private final Function<KVConnection, ConnectionHandler> acceptor;
	private final Promise<NettyKVConnection> handshake;
	private final AtomicReference<CloseReason> closeReason = new AtomicReference<>();
	private final OutboundQueue outbound;
	private final ConnectionSends sends;
	private final SameHostLink sameHost;
	private final Heartbeats heartbeats;
	private final ConnectionInbound inbound;

	private final Sinks.Empty<Void> onClose = Sinks.empty();

	private volatile ConnectionHandler handler;
	private volatile HostPort remote;
	// "[id, L:local - R:remote]" once active; read by log lines on any thread.
	private volatile String prefix;

	// Event-loop confined.
	private final Handshake steps;
	private ChannelHandlerContext ctx;
	private boolean activated;
	private boolean closeNotified;
	// What channelInactive does was done (on the loop, or once the loop ended: see loopEnded).
	private volatile boolean inactiveDone;

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
		this.sends = new ConnectionSends(channel, settings, id, this::remoteAddress, this::closeReason, cause -> {
			onFailure(cause);
			channel.close();
		});
		this.outbound = sends.queue();
		this.heartbeats = new Heartbeats(outbound, settings.heartbeatInterval());
		this.sameHost = new SameHostLink(channel, settings, acceptor == null, outbound::sameHost, outbound::writable,
				this::ringData, () -> prefix);
		this.inbound = new ConnectionInbound(this, steps, outbound, heartbeats, sameHost);
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
		ConnectionPipeline.install(channel, settings, connection, connection.inbound, acceptor != null ? null : remote);
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
		sends.message(message, gate, listener);
	}

	/** Sends a scatter block's pieces as scatter frames gathered in place (each piece alone on a same-host ring). */
	@Override
	public void send(Block block, SendListener listener) {
		sends.block(block, listener);
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
		return sends.pendingBytes();
	}

	/** TCP, or the same-host ring once the handshake settled it; TLS when the pipeline has an SSL handler. */
	@Override
	public RoomPath path() {
		return new RoomPath(sameHost.active() ? RoomPath.Kind.SHARED_MEMORY : RoomPath.Kind.TCP, 1,
				channel.pipeline().get(SslHandler.class) != null);
	}

	/** @return whether KV data moves through a same-host shared-memory ring on this connection (read on its loop) */
	public boolean sameHostActive() {
		return sameHost.active();
	}

	/** @return heartbeats received so far */
	public long heartbeatsReceived() {
		return heartbeats.receivedCount();
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

	// ---- handshake and failures ----------------------------------------------------------------------------------

	/** The handshake completed: decode offers its same-host ring first, so that connect() returns with it settled. */
	void handshakeCompleted() {
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

	/** @return the engine's handler; known once the handshake completed */
	ConnectionHandler handler() {
		return handler;
	}

	/** @return the "[id, L:local - R:remote]" that starts this connection's log lines */
	String logPrefix() {
		return prefix;
	}

	// Data from the same-host ring passes the same gate as a TCP data frame.
	private PayloadSink ringData(DataHeader header) {
		return inbound.onData(header);
	}

	/** A protocol error or a failing handler, reported by the inbound side or the outbound queue: closes. */
	void onFailure(Throwable cause) {
		CloseReason reason = CloseReasons.failure(cause);
		if (!handshake.isDone() && cause instanceof ProtocolException protocol) {
			steps.failed(protocol);
			steps.tellRefused(ctx, reason.message());
		}
		if (!firstReason(reason)) {
			log.debug("{} after close ({}): {}", prefix, closeReason(), reason.message());
		}
		else if (reason.kind() == CloseReason.Kind.PROTOCOL) {
			log.warn("{} closing: {}", prefix, reason.message());
		}
		else {
			log.error("{} closing: {}", prefix, reason.message(), cause);
		}
	}

	/** @return whether {@code reason} is the connection's: the first one recorded names why it closes */
	private boolean firstReason(CloseReason reason) {
		return closeReason.compareAndSet(null, reason);
	}

	/** Records {@code reason} and logs that the connection closes for it, when it is the first. */
	private void closing(CloseReason reason) {
		if (firstReason(reason)) {
			log.warn("{} closing: {}", prefix, reason.message());
		}
	}

	// ---- channel events -----------------------------------------------------------------------------------------

	@Override
	public void handlerAdded(ChannelHandlerContext ctx) {
		this.ctx = ctx;
		inbound.attach(ctx);
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
				closing(CloseReasons.handshakeTimeout(settings));
				channel.close();
			});
			outbound.start(ctx, prefix);
			heartbeats.start(ctx);
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
				ProtocolException failure = CloseReasons.tlsHandshakeFailed(e.cause());
				if (!handshake.isDone()) {
					steps.failed(failure);
				}
				closing(new CloseReason(CloseReason.Kind.PROTOCOL, failure.getMessage()));
				ctx.close();
			}
			return;
		}
		if (evt instanceof IdleStateEvent e) {
			if (e.state() == IdleState.READER_IDLE) {
				closing(CloseReasons.silentPeer(remoteAddress(), steps.peerHeartbeatInterval()));
				ctx.close();
			}
			return;
		}
		ctx.fireUserEventTriggered(evt);
	}

	@Override
	public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
		CloseReason reason = CloseReasons.pipelineError(cause);
		if (firstReason(reason)) {
			if (CloseReasons.tlsCause(cause) != null) {
				log.warn("{} closing: {}", prefix, reason.message());
			}
			else if (cause instanceof IOException) {
				log.debug("{} closing: {}", prefix, reason.message());
			}
			else {
				log.warn("{} closing: {}", prefix, reason.message(), cause);
			}
		}
		ctx.close();
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
		heartbeats.stop();
		steps.stop();
		firstReason(CloseReasons.peerClosed(remoteAddress(), steps.prefaceReceived(), settings));
		CloseReason reason = closeReason.get();
		log.debug("{} closed: {}", prefix, reason);
		outbound.closed();
		sameHost.close();
		if (!handshake.isDone()) {
			handshake.tryFailure(CloseReasons.handshakeFailed(remoteAddress(), steps.failure(), reason));
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

	private static HostPort toHostPort(SocketAddress address) {
		if (address instanceof InetSocketAddress inet) {
			return new HostPort(inet.getHostString(), inet.getPort());
		}
		return new HostPort(String.valueOf(address), 0);
	}
}
