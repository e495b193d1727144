package io.kvferry.transport.ucx.internal;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

import io.kvferry.HostPort;
import io.kvferry.KVFerryException;
import io.kvferry.ProtocolException;
import io.kvferry.RoomPath;
import io.kvferry.spi.Block;
import io.kvferry.spi.CloseReason;
import io.kvferry.spi.ConnectionHandler;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.PayloadSink;
import io.kvferry.spi.ScatterBlock;
import io.kvferry.spi.ScatterHeader;
import io.kvferry.spi.SendGate;
import io.kvferry.spi.SendListener;
import io.kvferry.transport.ucx.UcxDataPath;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import org.jspecify.annotations.Nullable;
import org.openucx.jucx.ucp.UcpAmData;
import org.openucx.jucx.ucp.UcpEndpoint;
import org.openucx.jucx.ucp.UcpEndpointParams;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * One connection between two UCX workers: an endpoint each way (each side connects to the other's worker address),
 * messages and blocks as active messages numbered in the order handed over, and decode's reads of prefill's pages.
 * Everything but the {@link KVConnection} entry points runs on the node's loop.
 *
 * <p>A message's or block's {@link SendListener} hears {@code written} once the peer acknowledged it: the peer then
 * finished with it and with everything before it, so that no read of this side's memory is still to come (a Success
 * acknowledged means decode read every byte it reports). A close asks the peer to close too and waits (at most the
 * handshake timeout) for its answer, which it sends once no read of its own is in flight; only then does
 * {@link ConnectionHandler#onClose} run.
 *
 * <p>This class holds the connection's life: its opening once the handshake settled the peer, heartbeats and
 * silence, and the close. What it sends is {@link Outbound}'s, what arrives goes through {@link Arrivals}, the peer's
 * regions and the reads that name them are {@link PeerRegions}', and what arrived and is not finished waits in
 * {@link Inbound}.
 */
final class UcxConnection implements KVConnection {

	private static final Logger log = LoggerFactory.getLogger(UcxConnection.class);

	enum State {
		CONNECTING, OPEN, CLOSING, CLOSED
	}

	final long id;
	private final UcxNode node;
	private final HostPort remote;
	private final boolean accepted;
	private final Inbound inbound = new Inbound(this);
	private final Outbound outbound;
	private final PeerRegions regions;
	private final Arrivals arrivals;
	private final Sinks.Empty<Void> closed = Sinks.empty();
	// Sends handed over before the peer was ready (prefill waits for decode's first message).
	private final List<Runnable> deferred = new ArrayList<>();
	private volatile State state = State.CONNECTING;
	private volatile @Nullable ConnectionHandler handler;
	private volatile UcxDataPath path = UcxDataPath.ACTIVE_MESSAGES;
	private @Nullable UcpEndpoint endpoint;
	private long ackedSent;
	// The peer's heartbeat interval, as its hello announced it: it is judged silent after two.
	private long peerIntervalNanos;
	private boolean pumpScheduled;
	private @Nullable CloseReason reason;
	private boolean closeSent;
	/** The peer's close arrived while this side was open: this side's close, whatever its reason, answers it. */
	private boolean peerAsked;
	private boolean peerAnswered;
	private boolean lingerOver;

	UcxConnection(UcxNode node, long id, HostPort remote, boolean accepted, @Nullable ConnectionHandler handler) {
		this.node = node;
		this.id = id;
		this.remote = remote;
		this.accepted = accepted;
		this.handler = handler;
		this.outbound = new Outbound(this, node);
		this.regions = new PeerRegions(this, node, inbound);
		this.arrivals = new Arrivals(this, node, inbound, regions, outbound, accepted);
	}

	@Override
	public String id() {
		return "ucx-" + Long.toHexString(id).substring(0, Math.min(8, Long.toHexString(id).length()))
				+ (accepted ? "s" : "c");
	}

	@Override
	public HostPort remoteAddress() {
		return remote;
	}

	@Override
	public RoomPath path() {
		return new RoomPath(path == UcxDataPath.ONE_SIDED ? RoomPath.Kind.UCX_ONE_SIDED
				: RoomPath.Kind.UCX_ACTIVE_MESSAGES, 1, false);
	}

	/** @return how the connection moves KV bytes (settled once it is open) */
	UcxDataPath dataPath() {
		return path;
	}

	@Override
	public boolean isActive() {
		State s = state;
		return s == State.OPEN || s == State.CONNECTING;
	}

	// ---- entry points from any thread

	@Override
	public void send(KVMessage message, SendGate gate, SendListener listener) {
		Objects.requireNonNull(message, "message");
		Objects.requireNonNull(gate, "gate");
		Objects.requireNonNull(listener, "listener");
		if (!isActive()) {
			listener.failed(closedError());
			return;
		}
		node.loop.execute(() -> whenReady(() -> outbound.message(message, gate, listener)));
	}

	@Override
	public void send(Block block, SendListener listener) {
		Objects.requireNonNull(block, "block");
		Objects.requireNonNull(listener, "listener");
		if (!isActive()) {
			listener.failed(closedError());
			return;
		}
		node.loop.execute(() -> whenReady(() -> {
			if (block instanceof ScatterBlock s) {
				outbound.scatter(s, listener);
			}
			else {
				outbound.block((DataBlock) block, listener);
			}
		}));
	}

	@Override
	public void close(String why) {
		Objects.requireNonNull(why, "why");
		node.loop.execute(() -> closeWith(new CloseReason(CloseReason.Kind.LOCAL, why), true));
	}

	@Override
	public Mono<Void> onClose() {
		return closed.asMono();
	}

	// ---- the loop's side

	/** Opens the connection once the handshake settled the peer: its endpoint, ids, keys and data path. */
	void open(Handshake peer, Handshake own, UcxDataPath chosen, boolean peerErrors) {
		outbound.opened(peer.connection());
		this.path = chosen;
		this.peerIntervalNanos = TimeUnit.MILLISECONDS.toNanos(peer.heartbeatMillis());
		ByteBuffer address = ByteBuffer.allocateDirect(peer.workerAddress().length);
		address.put(peer.workerAddress()).flip();
		UcpEndpointParams params = new UcpEndpointParams().setUcpAddress(address).setName(id());
		if (peerErrors) {
			params.setPeerErrorHandlingMode().setErrorHandler((ep, status, message) -> node.loop.execute(
					() -> closeWith(new CloseReason(CloseReason.Kind.PEER_CLOSED, "UCX endpoint to " + remote
							+ " failed: " + message + " (status " + status + ")"), false)));
		}
		try {
			endpoint = node.loop.worker.newEndpoint(params);
		}
		catch (RuntimeException e) {
			throw new KVFerryException("UCX cannot reach " + remote + " with transports " + node.describeTls() + ": "
					+ e.getMessage(), e);
		}
		if (!accepted) {
			// Decode is ready: prefill sends nothing before this first message.
			state = State.OPEN;
			outbound.control(Wire.HEARTBEAT, 0, null);
			pumpSoon();
		}
		log.debug("UCX connection {} to {} open: {} ({})", id(), remote, chosen, own.tls());
	}

	/** The acceptor's handler, once prefill's engine has it. */
	void handler(ConnectionHandler handler) {
		this.handler = handler;
	}

	private void whenReady(Runnable send) {
		if (state == State.CONNECTING) {
			deferred.add(send);
		}
		else {
			send.run();
		}
	}

	/**
	 * Decode's first message came: prefill's sends may go. After the sends handed over before (which still find the
	 * connection connecting and wait in turn), so that none overtakes another.
	 */
	void ready() {
		node.loop.execute(() -> {
			if (state != State.CONNECTING) {
				return;
			}
			state = State.OPEN;
			List<Runnable> sends = new ArrayList<>(deferred);
			deferred.clear();
			sends.forEach(Runnable::run);
			pumpSoon();
		});
	}

	/** Moves the inbound queue on soon, outside UCX's progress, and acknowledges what it finished. */
	void pumpSoon() {
		if (!pumpScheduled) {
			pumpScheduled = true;
			node.loop.execute(() -> {
				pumpScheduled = false;
				if (state != State.OPEN) {
					return;
				}
				inbound.pump();
				long finished = inbound.finishedSeq();
				if (finished > ackedSent && state == State.OPEN) {
					ackedSent = finished;
					outbound.control(Wire.ACK, finished, null);
				}
			});
		}
	}

	/**
	 * Heartbeats and silence, every quarter of this side's interval: a heartbeat once nothing was sent for three
	 * quarters of it (so the peer hears something at least once per interval), and a close once nothing was heard
	 * for two of the peer's own intervals, as it announced them in the handshake.
	 */
	void tick(long now, long intervalNanos) {
		if (state == State.CONNECTING && accepted
				&& now - arrivals.lastRead() > node.settings.handshakeTimeout().toNanos()) {
			closeWith(new CloseReason(CloseReason.Kind.PROTOCOL, "decode " + remote + " did not complete the UCX "
					+ "handshake within " + node.settings.handshakeTimeout()), false);
			return;
		}
		if (state != State.OPEN) {
			return;
		}
		if (now - arrivals.lastRead() > 2 * peerIntervalNanos) {
			log.debug("{} silent: sent up to {}, expected {}, unacked {}, inbound {}", id(), outbound.nextSeq(),
					arrivals.expectedSeq(), outbound.unacked(), inbound);
			closeWith(new CloseReason(CloseReason.Kind.SILENT_PEER, "no heartbeat from " + remote + " for 2 "
					+ "intervals (" + Duration.ofNanos(2 * peerIntervalNanos).toMillis() + " ms)"), false);
			return;
		}
		if (now - outbound.lastWrite() >= intervalNanos - intervalNanos / UcxNode.TICKS) {
			outbound.control(Wire.HEARTBEAT, 0, null);
		}
	}

	/** An active message for this connection: see {@link Arrivals#received}. */
	int received(long seq, int type, ByteBuf header, UcpAmData data) {
		return arrivals.received(seq, type, header, data);
	}

	/** @return the connection's state, written on the loop */
	State state() {
		return state;
	}

	/** Malformed input arrived: the connection closes, asking the peer to close too. */
	void malformed(String why) {
		log.warn("UCX connection {} closed: {}", id(), why);
		node.loop.execute(() -> closeWith(new CloseReason(CloseReason.Kind.PROTOCOL, why), true));
	}

	/**
	 * The peer asked to close. What arrived before its close is still delivered first, but a close of this side from
	 * now on (its manager's, say, in the meantime) answers the peer instead of asking it: the peer takes this side's
	 * close for its answer and sends nothing after it, so a question would wait out the whole timeout.
	 */
	void peerAsked() {
		peerAsked = true;
	}

	/** The peer answered this side's close. */
	void peerAnswered() {
		peerAnswered = true;
		node.loop.execute(this::tryFinish);
	}

	/** Engine calls, each a protocol failure when the engine refuses. */
	@Nullable PayloadSink onData(DataHeader h) {
		try {
			return handler().onData(this, h);
		}
		catch (ProtocolException e) {
			closeWith(new CloseReason(CloseReason.Kind.PROTOCOL, e.getMessage()), true);
			return null;
		}
	}

	/** A scatter frame's pieces: their sinks in {@code sinks} (handed filled with null), as {@link #onData} per piece. */
	void onScatter(ScatterHeader h, @Nullable PayloadSink[] sinks) {
		try {
			handler().onScatter(this, h, sinks);
		}
		catch (ProtocolException e) {
			closeWith(new CloseReason(CloseReason.Kind.PROTOCOL, e.getMessage()), true);
		}
	}

	void deliver(KVMessage message) {
		try {
			handler().onMessage(this, message);
		}
		catch (RuntimeException e) {
			log.warn("UCX connection {} closed: {}", id(), e.toString(), e);
			closeWith(new CloseReason(CloseReason.Kind.PROTOCOL, String.valueOf(e.getMessage())), true);
		}
	}

	/** A read failed: the connection cannot go on. */
	void failed(Throwable error) {
		closeWith(new CloseReason(CloseReason.Kind.IO, error.getMessage()), true);
	}

	void peerClosed(String why) {
		closeWith(new CloseReason(CloseReason.Kind.PEER_CLOSED, "connection closed by peer " + remote
				+ (why.isEmpty() ? "" : ": " + why)), false);
	}

	/** Counts payload bytes that landed, by the path they took. */
	void counted(boolean read, long bytes) {
		if (read) {
			node.bytesRead.add(bytes);
			node.reads.increment();
		}
		else {
			node.bytesInMessages.add(bytes);
			node.messages.increment();
		}
	}

	/** A read that was in flight at the close completed. */
	void settled() {
		tryFinish();
	}

	ByteBufAllocator allocator() {
		return node.allocator;
	}

	UcpEndpoint endpoint() {
		return Objects.requireNonNull(endpoint, "endpoint");
	}

	private ConnectionHandler handler() {
		return Objects.requireNonNull(handler, "handler");
	}

	/**
	 * Closes: nothing more is sent or delivered, listeners still waiting fail, and the peer is told (when
	 * {@code ask}, this side waits for its answer, at most the handshake timeout). The handler hears of it once every
	 * read in flight completed and the peer answered.
	 */
	void closeWith(CloseReason why, boolean ask) {
		if (state == State.CLOSING || state == State.CLOSED) {
			return;
		}
		boolean wasOpen = state == State.OPEN;
		state = State.CLOSING;
		reason = why;
		inbound.stop();
		outbound.failAll(closedError());
		for (Runnable r : deferred) {
			r.run();
		}
		deferred.clear();
		if (ask && !peerAsked && endpoint != null && (wasOpen || accepted)) {
			closeSent = true;
			outbound.control(Wire.CLOSE, 0, why.message());
			node.after(node.settings.handshakeTimeout(), () -> {
				lingerOver = true;
				tryFinish();
			});
		}
		else {
			lingerOver = true;
		}
		tryFinish();
	}

	private void tryFinish() {
		if (state != State.CLOSING || inbound.inFlight() > 0 || !(lingerOver || peerAnswered)) {
			return;
		}
		state = State.CLOSED;
		UcpEndpoint ep = endpoint;
		if (ep != null) {
			if (!closeSent && peerAsked) {
				// The answer to the peer's close: this side reads nothing of its memory any more.
				outbound.control(Wire.CLOSE, 0, "");
			}
			try {
				node.closing(ep.closeNonBlockingFlush());
			}
			catch (RuntimeException e) {
				log.debug("closing UCX endpoint of {}: {}", id(), e.toString());
			}
			endpoint = null;
		}
		regions.close();
		node.removed(this);
		CloseReason r = Objects.requireNonNull(reason);
		ConnectionHandler h = handler;
		try {
			if (h != null) {
				h.onClose(this, r);
			}
		}
		finally {
			closed.tryEmitEmpty();
		}
	}

	/** @return whether the connection is open: sends go out and what arrives is read */
	boolean isOpen() {
		return state == State.OPEN;
	}

	/** @return the endpoint to the peer, or null before it opened and once it closed */
	@Nullable UcpEndpoint liveEndpoint() {
		return endpoint;
	}

	/** @return why sends fail now: the connection closed, with its reason once it has one */
	KVFerryException closedError() {
		CloseReason r = reason;
		return new KVFerryException("connection " + id() + " to " + remote + " is closed"
				+ (r == null ? "" : ": " + r.message()));
	}

	@Override
	public String toString() {
		return id();
	}
}
