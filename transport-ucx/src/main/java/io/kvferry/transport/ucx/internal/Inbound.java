package io.kvferry.transport.ucx.internal;

import java.util.ArrayDeque;
import java.util.Iterator;

import io.kvferry.ProtocolException;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.PayloadSink;
import io.kvferry.spi.ScatterHeader;
import io.netty.buffer.ByteBuf;
import org.jspecify.annotations.Nullable;
import org.openucx.jucx.UcxCallback;
import org.openucx.jucx.ucp.UcpAmData;
import org.openucx.jucx.ucp.UcpRemoteKey;
import org.openucx.jucx.ucp.UcpRequest;
import org.openucx.jucx.ucs.UcsConstants;

/**
 * What a connection received and has not finished, in the order sent: control messages, blocks whose bytes come in
 * active messages, and blocks decode reads itself from the peer's registered pages. On the loop's thread only.
 *
 * <p>The engine sees everything in order: a block's header goes to {@link io.kvferry.spi.ConnectionHandler#onData}
 * (its grant and ledger accept it, or it gets no sink) before any byte of it is asked for, and a message is delivered
 * only once every block before it finished, so a Success, a fence or an abort acknowledgement never overtakes bytes
 * still in flight. Several blocks in a row are asked for at once and their reads overlap; their sinks hear of what
 * landed in block order. Every read lands in a landing zone the block's sink offered (pages its grant accepted) or
 * in a bounce buffer that is then written through the sink: no byte the peer sends chooses where it lands.
 */
final class Inbound {

	/** Blocks asked for at once behind the head. */
	private static final int MAX_STARTED = 64;
	/** Payload bytes of the blocks asked for at once. */
	private static final long MAX_STARTED_BYTES = 64L << 20;
	/** Largest single read. */
	private static final int MAX_READ = 1 << 30;
	/** Largest bounce buffer, for sinks that offer no landing zone. */
	private static final int MAX_BOUNCE = 1 << 20;
	/** A landing zone smaller than this (and than the run) is not read into: see {@link #target}. */
	private static final int MIN_ZONE = 64 << 10;
	/** Most gets one op of a strided source posts at once (one per chunk). */
	private static final int MAX_GETS = 1024;

	private final UcxConnection connection;
	private final ArrayDeque<Object> items = new ArrayDeque<>();
	// The block whose active-message bytes are still coming.
	private @Nullable Block open;
	// Reads and receives posted and not completed: a close waits for them before it reports.
	private int inFlight;
	private long finishedSeq;
	private boolean pumping;
	private boolean again;
	private boolean stopped;

	Inbound(UcxConnection connection) {
		this.connection = connection;
	}

	/** A control message arrived. */
	void message(long seq, KVMessage m) {
		items.add(new Message(seq, m));
	}

	/** The peer closes: acted on after everything it sent before. */
	void close(String reason) {
		items.add(new PeerClose(reason));
	}

	/** A block whose bytes follow in active messages; the first of them came with it. */
	void data(long seq, DataHeader h, Object first) {
		if (open != null) {
			throw new ProtocolException("block " + h + " began before " + open.header + " was complete");
		}
		checkLength(h);
		Block b = new Block(seq, h, null, 0, 0, null);
		items.add(b);
		open = b;
		more(seq, first);
	}

	/**
	 * The next active message of the open block: its bytes copied out of UCX's buffer (an eager message, which UCX
	 * then reuses at once), or UCX's handle of a rendezvous still to receive.
	 */
	void more(long seq, Object data) {
		Block b = open;
		if (b == null) {
			if (data instanceof ByteBuf copy) {
				copy.release();
			}
			throw new ProtocolException("bytes arrived with no block open");
		}
		b.seq = seq;
		long n = data instanceof ByteBuf copy ? copy.readableBytes() : ((UcpAmData) data).getLength();
		if (n < 1 || b.announced + n > b.header.payloadLength()) {
			throw new ProtocolException("block " + b.header + " got " + (b.announced + n) + " bytes (expected: "
					+ b.header.payloadLength() + ")");
		}
		b.segments.add(data);
		b.announced += n;
		if (b.announced == b.header.payloadLength()) {
			open = null;
		}
	}

	/** Many pieces of one room whose bytes came in one active message, one after another in piece order. */
	void scatter(long seq, ScatterHeader h, ByteBuf payload) {
		if (open != null) {
			payload.release();
			throw new ProtocolException("pieces of room " + h.room() + " began before " + open.header
					+ " was complete");
		}
		items.add(new Scatter(seq, h, payload));
	}

	/** A block decode reads from the peer's registered memory at {@code source}. */
	void pull(long seq, DataHeader h, long source, long sourceStride, UcpRemoteKey key) {
		if (open != null) {
			throw new ProtocolException("block " + h + " began before " + open.header + " was complete");
		}
		checkLength(h);
		items.add(new Block(seq, h, key, source, sourceStride, null));
	}

	private static void checkLength(DataHeader h) {
		if (h.chunkLen() < 1 || h.count() < 1) {
			throw new ProtocolException("block " + h + " carries no bytes (expected: chunkLen and count >= 1)");
		}
	}

	@Override
	public String toString() {
		Object head = items.peek();
		String h = head instanceof Block b ? "block " + b.header + " started=" + b.started + " pos=" + b.position
				+ " announced=" + b.announced + " segments=" + b.segments.size() + " op=" + (b.op == null ? null
						: b.op.done + "/" + b.op.length) + " sink=" + b.sink : String.valueOf(head);
		return "items=" + items.size() + " inFlight=" + inFlight + " finished=" + finishedSeq + " open=" + (open != null)
				+ " head=" + h;
	}

	/** @return reads and receives still in flight */
	int inFlight() {
		return inFlight;
	}

	/** @return the sequence number of the last item finished */
	long finishedSeq() {
		return finishedSeq;
	}

	/** Nothing more is delivered: what waits is dropped, and what is in flight only completes. */
	void stop() {
		stopped = true;
		for (Object o : items) {
			if (o instanceof Block b) {
				b.release();
			}
			else if (o instanceof Scatter sc) {
				sc.payload.release();
			}
		}
		items.clear();
		open = null;
	}

	/** Delivers what can be delivered, in order, and asks for the blocks it may. */
	void pump() {
		if (pumping) {
			again = true;
			return;
		}
		pumping = true;
		try {
			do {
				again = false;
				if (stopped) {
					return;
				}
				finishHead();
				if (!stopped) {
					startBehind();
				}
			}
			while (again);
		}
		finally {
			pumping = false;
		}
	}

	private void finishHead() {
		while (!stopped && !items.isEmpty()) {
			Object head = items.peek();
			if (head instanceof Message m) {
				items.poll();
				finishedSeq = m.seq;
				connection.deliver(m.message);
				continue;
			}
			if (head instanceof Scatter sc) {
				items.poll();
				deliver(sc);
				finishedSeq = sc.seq;
				continue;
			}
			if (head instanceof PeerClose c) {
				items.poll();
				connection.peerClosed(c.reason);
				return;
			}
			Block b = (Block) head;
			if (!b.started) {
				start(b);
			}
			if (stopped || !advance(b, true)) {
				return;
			}
			items.poll();
			finishedSeq = b.seq;
		}
	}

	private void startBehind() {
		int started = 0;
		long bytes = 0;
		Iterator<Object> it = items.iterator();
		if (it.hasNext()) {
			it.next();
		}
		while (it.hasNext() && !stopped) {
			if (!(it.next() instanceof Block b) || started >= MAX_STARTED || bytes >= MAX_STARTED_BYTES) {
				return;
			}
			if (!b.started) {
				start(b);
			}
			if (!stopped) {
				advance(b, false);
			}
			started++;
			bytes += b.header.payloadLength();
		}
	}

	/**
	 * Asks the engine about every piece before any byte of them lands (a refused piece fails its room, whose bytes are
	 * then dropped), then writes each piece through its sink.
	 */
	private void deliver(Scatter sc) {
		ScatterHeader h = sc.header;
		try {
			PayloadSink[] sinks = new PayloadSink[h.count()];
			connection.onScatter(h, sinks);
			int at = sc.payload.readerIndex();
			for (int i = 0; i < h.count() && !stopped; i++) {
				int n = h.length(i);
				connection.counted(false, n);
				if (sinks[i] != null) {
					sinks[i].write(sc.payload.slice(at, n));
					sinks[i].complete();
				}
				at += n;
			}
		}
		finally {
			sc.payload.release();
		}
	}

	private void start(Block b) {
		b.started = true;
		b.sink = connection.onData(b.header);
	}

	/**
	 * Moves a block on: applies a completed read (head only), posts the next. A block behind the head posts its first
	 * read only, and hears of it once it is the head.
	 *
	 * @return whether the block finished (its sink completed)
	 */
	private boolean advance(Block b, boolean head) {
		for (;;) {
			Op op = b.op;
			if (op != null) {
				if (!op.done || !head) {
					return false;
				}
				b.op = null;
				if (op.error != null) {
					op.release();
					connection.failed(op.error);
					return false;
				}
				apply(b, op);
				continue;
			}
			if (b.position == b.header.payloadLength()) {
				if (!head) {
					return false;
				}
				if (b.sink != null) {
					b.sink.complete();
				}
				return true;
			}
			if (!post(b, head)) {
				return false;
			}
		}
	}

	private void apply(Block b, Op op) {
		connection.counted(b.key != null, op.length);
		if (op.zone) {
			if (b.sink != null) {
				b.sink.landed(op.length);
			}
		}
		else if (b.sink != null) {
			op.buffer.writerIndex(op.length);
			b.sink.write(op.buffer);
		}
		op.release();
		b.position += op.length;
	}

	/** @return whether something was posted or applied, so that the block can move on */
	private boolean post(Block b, boolean head) {
		if (b.key != null) {
			return read(b);
		}
		Object next = b.segments.peek();
		if (next == null) {
			return false;
		}
		if (next instanceof ByteBuf copy) {
			if (!head) {
				return false;
			}
			b.segments.poll();
			int n = copy.readableBytes();
			connection.counted(false, n);
			try {
				if (b.sink != null) {
					b.sink.write(copy);
				}
			}
			finally {
				copy.release();
			}
			b.position += n;
			return true;
		}
		UcpAmData data = (UcpAmData) next;
		int n = (int) data.getLength();
		b.segments.poll();
		Op op = target(b, n, n);
		b.op = op;
		inFlight++;
		Transfer transfer = new Completion(op, 1).transfer();
		try {
			data.receive(op.address(), transfer);
		}
		catch (RuntimeException e) {
			transfer.onError(UcsConstants.STATUS.UCS_ERR_IO_ERROR, String.valueOf(e.getMessage()));
		}
		return true;
	}

	private boolean read(Block b) {
		DataHeader h = b.header;
		long remaining = h.payloadLength() - b.position;
		if (b.sink == null) {
			// Discarded: nothing is read.
			b.position = h.payloadLength();
			return true;
		}
		boolean contiguous = h.count() == 1 || b.sourceStride == h.chunkLen();
		// A strided source (a head slice of each token) is read a run of chunks at a time: one get per chunk, all
		// posted at once into consecutive bytes of the landing zone, the op done when the last one completed.
		long run = contiguous ? remaining : Math.min(remaining, (long) MAX_GETS * h.chunkLen());
		Op op = target(b, 1, (int) Math.min(run, MAX_READ));
		b.op = op;
		inFlight++;
		long chunk = b.position / h.chunkLen();
		long within = b.position - chunk * h.chunkLen();
		int gets = contiguous ? 1 : (int) ((within + op.length + h.chunkLen() - 1) / h.chunkLen());
		Completion completion = new Completion(op, gets);
		int at = 0;
		for (int i = 0; i < gets; i++) {
			int n = contiguous ? op.length : (int) Math.min(h.chunkLen() - within, op.length - at);
			long source = b.source + (contiguous ? b.position : (chunk + i) * b.sourceStride + within);
			Transfer transfer = completion.transfer();
			try {
				connection.endpoint().getNonBlocking(source, b.key, op.address() + at, n, transfer);
			}
			catch (RuntimeException e) {
				// UCX refused the read at once (an endpoint already in error): it fails as a read that failed
				// later, and so does every get of the op not posted yet.
				transfer.onError(UcsConstants.STATUS.UCS_ERR_IO_ERROR, String.valueOf(e.getMessage()));
				for (int k = i + 1; k < gets; k++) {
					completion.transfer().onError(UcsConstants.STATUS.UCS_ERR_IO_ERROR, "not posted");
				}
				break;
			}
			at += n;
			within = 0;
		}
		return true;
	}

	/**
	 * A landing zone of the block's sink for the next bytes, or a bounce buffer when it offers none. A read takes a
	 * bounce buffer, too, where the zone is a small piece of a longer run (one chunk of a strided destination, a head
	 * slice per token): one read of the run and a copy through the sink beat a read per chunk, each waiting for the
	 * last.
	 */
	private Op target(Block b, int min, int max) {
		ByteBuf zone = b.sink == null ? null : b.sink.landingZone(min, max);
		if (zone != null) {
			boolean small = b.key != null && zone.writableBytes() < Math.min(max, MIN_ZONE);
			if (zone.hasMemoryAddress() && zone.writableBytes() >= min && !small) {
				return new Op(zone, Math.min(zone.writableBytes(), max), true);
			}
			zone.release();
		}
		int n = b.key != null ? Math.min(max, MAX_BOUNCE) : max;
		return new Op(connection.allocator().directBuffer(n, n), n, false);
	}

	/** A read or receive in flight. */
	private static final class Op {
		final ByteBuf buffer;
		final int length;
		final boolean zone;
		boolean done;
		@Nullable Throwable error;

		Op(ByteBuf buffer, int length, boolean zone) {
			this.buffer = buffer;
			this.length = length;
			this.zone = zone;
		}

		long address() {
			return buffer.memoryAddress() + buffer.writerIndex();
		}

		void release() {
			buffer.release();
		}
	}

	/**
	 * Completes an op on the loop's thread once each of its {@code pending} gets or receives completed (the first
	 * error kept), then moves the queue on: an op is never reported while one of its transfers may still land.
	 */
	private final class Completion {
		private final Op op;
		private int pending;
		private @Nullable Throwable error;

		Completion(Op op, int pending) {
			this.op = op;
			this.pending = pending;
		}

		/** @return the callback of one more transfer of the op */
		Transfer transfer() {
			return new Transfer(this);
		}

		void one(@Nullable Throwable failure) {
			if (failure != null && error == null) {
				error = failure;
			}
			if (--pending > 0) {
				return;
			}
			op.done = true;
			op.error = error;
			inFlight--;
			if (stopped) {
				op.release();
				connection.settled();
				return;
			}
			connection.pumpSoon();
		}
	}

	/**
	 * One get or receive of an op, reported once: JUCX both throws and calls back when UCX refuses a transfer at once.
	 */
	private final class Transfer extends UcxCallback {
		private final Completion completion;
		private boolean reported;

		Transfer(Completion completion) {
			this.completion = completion;
		}

		@Override
		public void onSuccess(UcpRequest request) {
			report(null);
		}

		@Override
		public void onError(int status, String message) {
			report(new ProtocolException("UCX read from " + connection.remoteAddress() + " failed: " + message
					+ " (status " + status + ")"));
		}

		private void report(@Nullable Throwable error) {
			if (!reported) {
				reported = true;
				completion.one(error);
			}
		}
	}

	/** Pieces whose bytes came in one message. */
	private record Scatter(long seq, ScatterHeader header, ByteBuf payload) {
	}

	/** A control message, with its sequence number. */
	private record Message(long seq, KVMessage message) {
	}

	/** The peer's close, in order after what it sent. */
	private record PeerClose(String reason) {
	}

	/** One block of payload: read one-sided (a key) or received in active messages (segments). */
	private static final class Block {
		// The sequence number of the block's last active message so far.
		long seq;
		final DataHeader header;
		final @Nullable UcpRemoteKey key;
		final long source;
		final long sourceStride;
		// Eager bytes (a ByteBuf the block owns) or rendezvous handles, in order.
		final ArrayDeque<Object> segments = new ArrayDeque<>(1);
		long announced;
		boolean started;
		@Nullable PayloadSink sink;
		long position;
		@Nullable Op op;

		Block(long seq, DataHeader header, @Nullable UcpRemoteKey key, long source, long sourceStride,
				@Nullable PayloadSink sink) {
			this.seq = seq;
			this.header = header;
			this.key = key;
			this.source = source;
			this.sourceStride = sourceStride;
			this.sink = sink;
		}

		/** Drops what waits; an op in flight releases its buffer when it completes. */
		void release() {
			for (Object o : segments) {
				if (o instanceof ByteBuf copy) {
					copy.release();
				}
			}
			segments.clear();
		}
	}
}
