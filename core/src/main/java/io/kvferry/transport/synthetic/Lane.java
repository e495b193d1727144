package io.kvferry.transport.synthetic;

import java.util.ArrayDeque;
import java.util.Objects;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import io.kvferry.HostPort;
import io.kvferry.KVFerryException;
import io.kvferry.MemoryRegion;
import io.kvferry.RoomPath;
import io.kvferry.spi.Block;
import io.kvferry.spi.CloseReason;
import io.kvferry.spi.ConnectionHandler;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.NativeMemory;
import io.kvferry.spi.PayloadSink;
import io.kvferry.spi.SendGate;
import io.kvferry.spi.SendListener;
import io.netty.buffer.ByteBuf;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Scheduler;

/**
 * One connection a decode rank opened to a synthetic prefill rank, seen from decode: what decode sends runs on the
 * lane's serial worker, and so does everything the synthetic rank hands decode on it (its answers, its data blocks,
 * its fences), one task at a time, so that decode's handler is called serially as a transport's I/O thread calls it.
 * Once attached to a session as one of its stripes, the lane sends its share of each room's blocks, in the order the
 * rooms came, paced by the instance's byte rate; a block's bytes are filled into the lane's own native staging memory
 * and handed over as views of it, never copied onto the heap.
 */
final class Lane implements KVConnection {

	private static final Logger log = LoggerFactory.getLogger(Lane.class);
	// Payload segments as a transport's reads hand them over.
	private static final int SEGMENT = 1 << 20;

	private final SyntheticPrefill source;
	final SyntheticPrefill.Rank rank;
	private final String id;
	private final HostPort remote;
	private final ConnectionHandler handler;
	private final Scheduler.Worker worker;
	private final Queue<Runnable> inbox = new ConcurrentLinkedQueue<>();
	private final AtomicInteger wip = new AtomicInteger();
	private final AtomicBoolean closed = new AtomicBoolean();
	private final Sinks.Empty<Void> onClose = Sinks.empty();
	// Set on the lane's thread by its first message; other lanes' threads read it only after the session attached it.
	private volatile @Nullable SyntheticSession session;
	private volatile int stripe;
	// The lane's thread only: the rooms whose share it sends, in order, and the block the rate granted last, which
	// waits for its time.
	private final ArrayDeque<ServedRoom> rooms = new ArrayDeque<>();
	private @Nullable ServedRoom grantedRoom;
	private int grantedBlock = -1;
	private boolean stepping;
	private @Nullable MemoryRegion staging;

	Lane(SyntheticPrefill source, SyntheticPrefill.Rank rank, String id, ConnectionHandler handler,
			Scheduler.Worker worker) {
		this.source = source;
		this.rank = rank;
		this.id = id;
		this.remote = rank.endpoint();
		this.handler = handler;
		this.worker = worker;
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
		if (closed.get()) {
			listener.failed(new KVFerryException("connection " + id + " is closed"));
			return;
		}
		post(() -> {
			if (closed.get()) {
				listener.failed(new KVFerryException("connection " + id + " is closed"));
				return;
			}
			if (!gate.isOpen()) {
				listener.failed(new KVFerryException("the room of " + message + " stopped before it was written"));
				return;
			}
			// Written once the synthetic rank has it, as a socket write precedes the peer's read.
			try {
				received(message);
			}
			finally {
				listener.written();
			}
		});
	}

	@Override
	public void send(Block block, SendListener listener) {
		// Decode sends no KV to prefill: a block here is a broken engine, and the connection goes as a peer's would.
		String reason = "synthetic prefill rank " + remote + " takes no data blocks, got one for room " + block.room();
		closeWith(new CloseReason(CloseReason.Kind.PROTOCOL, reason));
		listener.failed(new KVFerryException(reason));
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
		closeWith(new CloseReason(CloseReason.Kind.LOCAL, reason));
	}

	@Override
	public Mono<Void> onClose() {
		return onClose.asMono();
	}

	/** @return the lane's stripe in its session (0 before it joined one) */
	int stripe() {
		return stripe;
	}

	/** Attaches the lane to a session as stripe {@code index}; on the lane's thread. */
	void attach(SyntheticSession s, int index) {
		stripe = index;
		session = s;
	}

	/** What decode sent, on the lane's thread. */
	private void received(KVMessage message) {
		SyntheticSession s = session;
		if (s == null) {
			SyntheticSession.open(source, this, message);
		}
		else if (stripe != 0) {
			refuse("unexpected " + message.getClass().getSimpleName() + " on stripe " + stripe
					+ " (expected: control messages on stripe 0 only)");
		}
		else {
			s.onMessage(this, message);
		}
	}

	/** Hands decode a control message; on the lane's thread. */
	void deliver(KVMessage message) {
		if (!closed.get()) {
			handler.onMessage(this, message);
		}
	}

	/** Closes the lane because decode broke the protocol, as a prefill rank would. */
	void refuse(String reason) {
		log.warn("synthetic prefill rank {} closes connection {}: {}", remote, id, reason);
		closeWith(new CloseReason(CloseReason.Kind.PEER_CLOSED, "connection closed by synthetic prefill rank "
				+ remote + ": " + reason));
	}

	/**
	 * Closes the lane: decode's handler hears {@code reason} after every task queued before, none of which touches
	 * memory any more, and the lane's session closes its other stripes.
	 */
	void closeWith(CloseReason reason) {
		if (!closed.compareAndSet(false, true)) {
			return;
		}
		source.closed(this);
		post(() -> {
			rooms.clear();
			grantedRoom = null;
			handler.onClose(this, reason);
			onClose.tryEmitEmpty();
			SyntheticSession s = session;
			if (s != null) {
				s.laneClosed(this, reason);
			}
		});
	}

	/** @return whether the lane closed */
	boolean isClosed() {
		return closed.get();
	}

	/** Adds a room whose share of blocks this lane sends; on the lane's thread. */
	void serve(ServedRoom room) {
		rooms.add(room);
		wake();
	}

	/** Sends nothing more of the room, then acknowledges its abort; on the lane's thread. */
	void abortAck(long room) {
		rooms.removeIf(r -> r.id == room);
		if (grantedRoom != null && grantedRoom.id == room) {
			grantedRoom = null;
		}
		deliver(new KVMessage.AbortAck(room));
	}

	private void wake() {
		if (!stepping) {
			stepping = true;
			post(this::step);
		}
	}

	/**
	 * Sends the next block of the first room, or waits for the rate to grant it; one block per task, so that what decode
	 * sends meanwhile (an abort) is read between two blocks.
	 */
	private void step() {
		stepping = false;
		ServedRoom r = rooms.peek();
		if (closed.get() || r == null) {
			return;
		}
		int s = stripe;
		int b = r.aborted ? -1 : r.nextBlock(s);
		if (b < 0) {
			rooms.poll();
			if (!r.aborted) {
				shareSent(r);
			}
			wake();
			return;
		}
		DataHeader h = r.header(b);
		if (grantedRoom != r || grantedBlock != b) {
			long wait = source.paceBytes(h.payloadLength());
			if (wait > 0) {
				grantedRoom = r;
				grantedBlock = b;
				stepping = true;
				later(this::step, wait);
				return;
			}
		}
		grantedRoom = null;
		r.advance(s, b);
		send(r, b, h);
		wake();
	}

	/** Hands decode one block: its header, then its bytes, filled into the staging memory by the pattern. */
	private void send(ServedRoom r, int b, DataHeader h) {
		PayloadSink sink = handler.onData(this, h);
		if (sink == null) {
			// Decode drops it: the room ended there.
			return;
		}
		int length = Math.toIntExact(h.payloadLength());
		long address = staging(length);
		r.fill(b, source.pattern(), address);
		r.sent(stripe, address, length);
		for (int off = 0; off < length; off += SEGMENT) {
			ByteBuf segment = NativeMemory.wrap(address + off, Math.min(SEGMENT, length - off));
			try {
				sink.write(segment);
			}
			finally {
				segment.release();
			}
		}
		sink.complete();
		source.sent(length);
	}

	/** The lane sent its share of the room: a further stripe fences it, and the last stripe hands over the Success. */
	private void shareSent(ServedRoom r) {
		int s = stripe;
		long bytes = r.sentOn(s);
		if (s > 0 && bytes > 0) {
			deliver(new KVMessage.Fence(r.id, bytes, r.checksumOn(s)));
		}
		SyntheticSession session = this.session;
		if (r.shareSent() && session != null) {
			session.succeed(r);
		}
	}

	private long staging(int length) {
		MemoryRegion m = staging;
		if (m == null || m.length() < length) {
			m = MemoryRegion.allocate(1, Math.max(length, ServedRoom.BLOCK_BYTES));
			staging = m;
		}
		return m.address();
	}

	/** Runs {@code task} on the lane's thread after {@code nanos}. */
	void later(Runnable task, long nanos) {
		worker.schedule(() -> post(task), nanos, TimeUnit.NANOSECONDS);
	}

	/** Runs {@code task} on the lane's thread, after every task posted before. */
	void post(Runnable task) {
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
					// Decode's handler refused what it was handed: the connection goes, as over a socket.
					log.warn("connection {} closed: {}", id, e.toString(), e);
					String why = e.getMessage() == null ? e.toString() : e.getMessage();
					closeWith(new CloseReason(CloseReason.Kind.PROTOCOL, why));
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
