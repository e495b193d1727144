package io.kvferry.transport.local;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

import io.kvferry.HostPort;
import io.kvferry.KVFerryException;
import io.kvferry.RoomPath;
import io.kvferry.spi.Block;
import io.kvferry.spi.CloseReason;
import io.kvferry.spi.ConnectionHandler;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.KVTransport;
import io.kvferry.spi.NativeMemory;
import io.kvferry.spi.PayloadSink;
import io.kvferry.spi.ScatterBlock;
import io.kvferry.spi.SendGate;
import io.kvferry.spi.SendListener;
import io.netty.buffer.ByteBuf;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * A transport without sockets: listeners live in this object, and each side of a connection receives on its own
 * serial worker of the given scheduler. Data blocks are delivered to the receiver as buffers wrapping the sender's
 * memory, in 1 MiB segments, so the engine's checks and copies run exactly as over TCP. For tests (on virtual time
 * when given a virtual-time scheduler) and for single-process setups.
 */
public final class InMemoryKVTransport implements KVTransport {

	private static final Logger log = LoggerFactory.getLogger(InMemoryKVTransport.class);
	private static final int SEGMENT = 1 << 20;

	// Null: Schedulers.single() as it is when a connection opens, so that a transport made before a test replaces the
	// schedulers (virtual time) does not keep the disposed one.
	private final @Nullable Scheduler scheduler;
	private final Map<HostPort, Function<KVConnection, ConnectionHandler>> listeners = new ConcurrentHashMap<>();
	private final Set<End> ends = ConcurrentHashMap.newKeySet();
	private final AtomicInteger ports = new AtomicInteger(40000);
	private final AtomicInteger ids = new AtomicInteger();

	private InMemoryKVTransport(@Nullable Scheduler scheduler) {
		this.scheduler = scheduler;
	}

	/** @return a transport delivering on {@link Schedulers#single()}, as it is when each connection opens */
	public static InMemoryKVTransport create() {
		return new InMemoryKVTransport(null);
	}

	/** @return a transport delivering on {@code scheduler} (a virtual-time scheduler in tests) */
	public static InMemoryKVTransport create(Scheduler scheduler) {
		return new InMemoryKVTransport(Objects.requireNonNull(scheduler, "scheduler"));
	}

	@Override
	public Mono<Listener> listen(HostPort bindAddress, Function<KVConnection, ConnectionHandler> acceptor) {
		Objects.requireNonNull(bindAddress, "bindAddress");
		Objects.requireNonNull(acceptor, "acceptor");
		return Mono.fromSupplier(() -> {
			HostPort address = bindAddress.port() == 0 ? new HostPort(bindAddress.host(), ports.incrementAndGet())
					: bindAddress;
			if (listeners.putIfAbsent(address, acceptor) != null) {
				throw new KVFerryException("address already in use: " + address);
			}
			return new InMemoryListener(address);
		});
	}

	@Override
	public Mono<KVConnection> connect(HostPort remote, ConnectionHandler handler) {
		Objects.requireNonNull(remote, "remote");
		Objects.requireNonNull(handler, "handler");
		return Mono.fromSupplier(() -> {
			Function<KVConnection, ConnectionHandler> acceptor = listeners.get(remote);
			if (acceptor == null) {
				throw new KVFerryException("connection refused: nothing listens at " + remote);
			}
			int id = ids.incrementAndGet();
			End client = new End("mem-" + id + "c", remote, remote, false);
			End server = new End("mem-" + id + "s", new HostPort("in-memory", 0), remote, true);
			client.peer = server;
			server.peer = client;
			client.handler = handler;
			server.handler = acceptor.apply(server);
			ends.add(client);
			ends.add(server);
			return client;
		});
	}

	/**
	 * Cuts every connection, as a network failure would: both sides see {@link ConnectionHandler#onClose}.
	 *
	 * @param reason what the handlers are told
	 */
	public void disconnectAll(CloseReason reason) {
		// Every end closes before any handler hears of it, as in a network failure: a handler that closes its other
		// connections on hearing it then finds them closed with this reason, not with its own.
		List<End> cut = new ArrayList<>();
		for (End e : ends) {
			if (e.markClosed()) {
				cut.add(e);
			}
		}
		for (End e : cut) {
			e.closed(reason);
		}
	}

	/** @return open connection ends (two per connection) */
	public int openConnections() {
		return ends.size();
	}

	private final class InMemoryListener implements Listener {
		private final HostPort address;
		private final AtomicBoolean disposed = new AtomicBoolean();

		InMemoryListener(HostPort address) {
			this.address = address;
		}

		@Override
		public HostPort address() {
			return address;
		}

		@Override
		public void dispose() {
			if (disposed.compareAndSet(false, true)) {
				listeners.remove(address);
				for (End e : ends) {
					// Each connection once, from its accepted side: that side is the listener's and closes as
					// disposed, whichever end the set happens to list first.
					if (e.accepted && e.listenAddress.equals(address)) {
						CloseReason disposed = new CloseReason(CloseReason.Kind.DISPOSED, "listener " + address + " closed");
						e.closeBoth(disposed, new CloseReason(CloseReason.Kind.PEER_CLOSED, disposed.message()));
					}
				}
			}
		}

		@Override
		public boolean isDisposed() {
			return disposed.get();
		}
	}

	/** One side of a connection: what it sends runs on the peer's serial inbox. */
	private final class End implements KVConnection {
		private final String id;
		private final HostPort remote;
		private final HostPort listenAddress;
		private final boolean accepted;
		private final Queue<Runnable> inbox = new ConcurrentLinkedQueue<>();
		private final AtomicInteger wip = new AtomicInteger();
		private final Scheduler.Worker worker = (scheduler != null ? scheduler : Schedulers.single()).createWorker();
		private final AtomicBoolean closed = new AtomicBoolean();
		private final Sinks.Empty<Void> onClose = Sinks.empty();
		// Set by connect, which makes the two ends of a pair before either can be known to a handler; a pair is
		// cyclic, so the ends cannot take each other in their constructors.
		@SuppressWarnings("NullAway.Init")
		volatile End peer;
		@SuppressWarnings("NullAway.Init")
		volatile ConnectionHandler handler;

		End(String id, HostPort remote, HostPort listenAddress, boolean accepted) {
			this.id = id;
			this.remote = remote;
			this.listenAddress = listenAddress;
			this.accepted = accepted;
		}

		@Override
		public String id() {
			return id;
		}

		@Override
		public HostPort remoteAddress() {
			return remote;
		}

		@Override
		public void send(KVMessage message, SendGate gate, SendListener listener) {
			Objects.requireNonNull(message, "message");
			Objects.requireNonNull(gate, "gate");
			Objects.requireNonNull(listener, "listener");
			End to = peer;
			if (closed.get()) {
				listener.failed(new KVFerryException("connection " + id + " is closed"));
				return;
			}
			to.post(() -> {
				if (to.closed.get()) {
					listener.failed(new KVFerryException("connection " + id + " is closed"));
					return;
				}
				if (!gate.isOpen()) {
					listener.failed(new KVFerryException("the room of " + message + " stopped before it was written"));
					return;
				}
				// Written once the peer has it, as a socket write precedes the peer's read.
				try {
					to.handler.onMessage(to, message);
				}
				finally {
					listener.written();
				}
			});
		}

		/** Carries no scatter frames: each piece of a scatter block goes as its own data block. */
		@Override
		public void send(Block block, SendListener listener) {
			Objects.requireNonNull(block, "block");
			Objects.requireNonNull(listener, "listener");
			if (block instanceof ScatterBlock s) {
				for (int i = 0; i < s.header().count(); i++) {
					sendData(s.piece(i));
				}
			}
			else {
				sendData((DataBlock) block);
			}
			listener.written();
		}

		private void sendData(DataBlock block) {
			End to = peer;
			if (closed.get()) {
				return;
			}
			to.post(() -> {
				DataHeader h = block.header();
				if (to.closed.get() || !block.gate().isOpen()) {
					return;
				}
				PayloadSink sink = to.handler.onData(to, h);
				if (sink == null) {
					return;
				}
				for (int i = 0; i < h.count(); i++) {
					long src = block.srcAddress() + i * (h.count() == 1 ? 0 : block.srcStride());
					for (int off = 0; off < h.chunkLen(); off += SEGMENT) {
						ByteBuf segment = NativeMemory.wrap(src + off, Math.min(SEGMENT, h.chunkLen() - off));
						try {
							sink.write(segment);
						}
						finally {
							segment.release();
						}
					}
				}
				sink.complete();
			});
		}

		@Override
		public RoomPath path() {
			return RoomPath.IN_MEMORY;
		}

		@Override
		public boolean isActive() {
			return !closed.get();
		}

		@Override
		public void close(String reason) {
			closeBoth(new CloseReason(CloseReason.Kind.LOCAL, reason), new CloseReason(CloseReason.Kind.PEER_CLOSED,
					"connection closed by peer " + remote + ": " + reason));
		}

		/** Closes this end with {@code own} and the peer's with {@code peers}. */
		void closeBoth(CloseReason own, CloseReason peers) {
			closeOne(own);
			End p = peer;
			if (p != null) {
				p.closeOne(peers);
			}
		}

		private void closeOne(CloseReason reason) {
			if (markClosed()) {
				closed(reason);
			}
		}

		/** @return whether this call closed the end (its handler must then hear of it) */
		boolean markClosed() {
			if (closed.compareAndSet(false, true)) {
				ends.remove(this);
				return true;
			}
			return false;
		}

		/** Tells the handler, after every delivery queued before: none of them touches memory once it ran. */
		void closed(CloseReason reason) {
			post(() -> {
				handler.onClose(this, reason);
				onClose.tryEmitEmpty();
			});
		}

		@Override
		public Mono<Void> onClose() {
			return onClose.asMono();
		}

		private void post(Runnable task) {
			inbox.offer(task);
			if (wip.getAndIncrement() == 0) {
				worker.schedule(this::drain);
			}
		}

		private void drain() {
			int missed = 1;
			for (;;) {
				Runnable task;
				while ((task = inbox.poll()) != null) {
					try {
						task.run();
					}
					catch (RuntimeException e) {
						log.warn("connection {} closed: {}", id, e.toString(), e);
						String why = e.getMessage() == null ? e.toString() : e.getMessage();
						closeBoth(new CloseReason(CloseReason.Kind.PROTOCOL, why), new CloseReason(
								CloseReason.Kind.PEER_CLOSED, "connection closed by peer: " + why));
					}
				}
				missed = wip.addAndGet(-missed);
				if (missed == 0) {
					return;
				}
			}
		}

		@Override
		public String toString() {
			return id;
		}
	}
}
