package io.kvferry.internal.stripe;

import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

import io.kvferry.spi.Block;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.SendGate;
import io.kvferry.spi.SendListener;

/**
 * One room's data on one {@link StripedConnection}: its blocks dealt in pieces over the stripes, evenly once its first
 * bytes went on stripe 0 alone, and a tally of what each stripe carried. When the room's data is complete, each
 * further stripe that carried some of it sends a fence with what it moved and stripe 0 the closing message with the
 * total and the stripes that fence, all behind the room's gate: once every one was written, no piece still queued
 * reads the engine's memory. A room that fits in its first bytes thus touches one connection only.
 *
 * <p>The rooms sharing a connection take turns: each stripe's transport queue holds at most {@link #WINDOW} bytes of
 * this room at a time, and the rest of its pieces wait here until the transport wrote those. A room of one page that
 * comes while a room of a gibibyte is being sent therefore waits for a window of the large room on each stripe, not
 * for all of it; a room smaller than the window goes to the transport at once.
 *
 * <p>Fed ({@link #send}, {@link #finish}) under the room's monitor, so each stripe's tally follows the order of its
 * connection; the transport's threads hand on the waiting pieces, lock-free, as the earlier ones are written.
 */
public final class StripedFlow {

	/**
	 * Bytes of one room a stripe's transport queue holds at most (a piece larger than that goes alone): two pieces, so
	 * that the next one is queued while one is written and a large room alone keeps its connection busy.
	 */
	public static final long WINDOW = 2L * Stripes.PIECE;

	/** Builds the message that closes a room's data on stripe 0. */
	@FunctionalInterface
	public interface Closing {

		/**
		 * @param bytes what the room moved over every stripe
		 * @param checksum the CRC32C of what stripe 0 carried (the fences carry the others')
		 * @param fences the stripes that send a fence, bit {@code k} for stripe {@code k}
		 */
		KVMessage of(long bytes, long checksum, int fences);
	}

	private final long room;
	private final Lane[] lanes;
	// Per stripe, the small blocks dealt to it, grouped into scatter blocks.
	private final ScatterGather[] gathers;
	private final SendGate gate;
	// Bytes of the room that go on stripe 0 alone before the rest is dealt over every stripe, and of each stretch the
	// rest is dealt in.
	private final long first;
	// Per stripe, the bytes of the room dealt to it.
	private final long[] dealt;
	// The stripe of the stretch being dealt, and the bytes it still takes.
	private int stretch;
	private long stretchLeft;

	StripedFlow(long room, KVConnection[] stripes, boolean checksums, SendGate gate, long firstStripeBytes) {
		this.room = room;
		this.gate = gate;
		this.first = firstStripeBytes;
		this.dealt = new long[stripes.length];
		this.stretchLeft = firstStripeBytes;
		this.lanes = new Lane[stripes.length];
		this.gathers = new ScatterGather[stripes.length];
		for (int i = 0; i < lanes.length; i++) {
			lanes[i] = new Lane(stripes[i], new Tally(checksums));
			gathers[i] = new ScatterGather(lanes[i], gate);
		}
	}

	/** @return the gate the room's blocks are sent behind */
	public SendGate gate() {
		return gate;
	}

	/**
	 * Takes a block of the room, cut into pieces so that it can be spread over the stripes and sent in turns. A small
	 * piece waits in its stripe's group until {@link #flush}, and goes with the others of the group as one scatter
	 * block.
	 */
	public void send(DataBlock block) {
		Stripes.cut(block, Stripes.PIECE, this::deal);
	}

	/**
	 * Takes a contiguous KV block of the room given by its fields ({@link #send} of a one-chunk block): one that needs
	 * no cutting goes to its stripe's group without a block object.
	 */
	public void sendKv(long room, int region, long dstOffset, int length, long srcAddress) {
		if (length > Stripes.PIECE) {
			send(Stripes.kvBlock(room, region, dstOffset, length, srcAddress, gate));
			return;
		}
		gathers[stripeFor(length)].sendKv(room, region, dstOffset, length, srcAddress);
	}

	/** Queues every group gathered so far, on its stripe. */
	public void flush() {
		for (ScatterGather g : gathers) {
			g.flush();
		}
	}

	/**
	 * Sends a piece on stripe 0 while the room's first bytes last, then deals the rest in stretches of as many bytes,
	 * each to the stripe that got the fewest bytes of the room so far (round robin for stretches of one size): the rest
	 * first makes up for what stripe 0 took alone, so that a large room still ends up even over the stripes. A stretch
	 * keeps a run of small pieces, which come buffer by buffer, on one stripe: on decode each buffer's ledger is then
	 * written by one connection's thread at a time, instead of its counters moving between cores piece by piece.
	 */
	private void deal(DataBlock piece) {
		gathers[stripeFor(piece.header().payloadLength())].send(piece);
	}

	/** @return the stripe a piece of {@code bytes} goes on, counted as dealt to it */
	private int stripeFor(long bytes) {
		if (stretchLeft <= 0) {
			int stripe = 0;
			for (int i = 1; i < dealt.length; i++) {
				if (dealt[i] < dealt[stripe]) {
					stripe = i;
				}
			}
			stretch = stripe;
			stretchLeft = first;
		}
		stretchLeft -= bytes;
		dealt[stretch] += bytes;
		return stretch;
	}

	/**
	 * Closes the room's data: a fence on every further stripe that carried some of it, then {@code closing} on stripe
	 * 0, each behind that stripe's pieces and gated like the data (a room stopped meanwhile sends neither its blocks
	 * nor these).
	 *
	 * @param written called once, when every one was written
	 * @param failed called for each one that was not
	 */
	public void finish(Closing closing, Runnable written, Consumer<Throwable> failed) {
		// Nothing of the room may follow its fences and Success.
		flush();
		int fences = 0;
		for (int i = 1; i < lanes.length; i++) {
			if (dealt[i] > 0) {
				fences |= 1 << i;
			}
		}
		AtomicInteger remaining = new AtomicInteger(1 + Integer.bitCount(fences));
		SendListener listener = SendListener.of(() -> {
			if (remaining.decrementAndGet() == 0) {
				written.run();
			}
		}, failed);
		long total = 0;
		for (int i = 1; i < lanes.length; i++) {
			Tally t = lanes[i].tally;
			if (dealt[i] > 0) {
				total += t.bytes();
				lanes[i].waiting.offer(new Last(new KVMessage.Fence(room, t.bytes(), t.checksum()), listener));
			}
		}
		Tally control = lanes[0].tally;
		lanes[0].waiting.offer(new Last(closing.of(total + control.bytes(), control.checksum(), fences), listener));
		for (Lane lane : lanes) {
			lane.pump();
		}
	}

	/** The message that closes a stripe's share of the room, sent once every piece before it went to the transport. */
	private record Last(KVMessage message, SendListener listener) {
	}

	/**
	 * One stripe's share of the room: the blocks and the closing message not yet handed to its connection, each
	 * tallied as it comes, in the stripe's order (a block that does not reach the transport belongs to a room that
	 * stopped or a connection that closed, whose closing messages are not sent either).
	 */
	private final class Lane implements ScatterGather.Out {

		final KVConnection connection;
		final Tally tally;
		// Pieces (and at the end the Last), in the order they were dealt.
		final Queue<Object> waiting = new ConcurrentLinkedQueue<>();
		// Bytes handed to the transport and not written yet.
		final AtomicLong handed = new AtomicLong();
		// Pump passes asked for: one thread hands on at a time, and a pass asked meanwhile runs again after it.
		final AtomicInteger wip = new AtomicInteger();

		Lane(KVConnection connection, Tally tally) {
			this.connection = connection;
			this.tally = tally;
		}

		@Override
		public void send(Block block) {
			tally.add(block);
			waiting.offer(block);
			pump();
		}

		/** Hands on what waits, in order, as far as the window lets; the transport's answers call it again. */
		void pump() {
			if (wip.getAndIncrement() != 0) {
				return;
			}
			int missed = 1;
			do {
				Object item;
				while ((item = waiting.peek()) != null) {
					if (item instanceof Last last) {
						waiting.poll();
						connection.send(last.message, gate, last.listener);
						continue;
					}
					Block block = (Block) item;
					long bytes = block.payloadLength();
					if (!gate.isOpen() || !connection.isActive()) {
						// Never read: the room stopped or the connection closed, and either fails the room.
						waiting.poll();
						continue;
					}
					long inFlight = handed.get();
					if (inFlight > 0 && inFlight + bytes > WINDOW) {
						// The transport's answer for an earlier piece pumps again.
						break;
					}
					waiting.poll();
					handed.addAndGet(bytes);
					connection.send(block, new Handed(bytes));
				}
				missed = wip.addAndGet(-missed);
			}
			while (missed != 0);
		}

		/** The transport's answer for one piece: its bytes leave the window, and what waits may go. */
		private final class Handed implements SendListener {

			private final long bytes;

			Handed(long bytes) {
				this.bytes = bytes;
			}

			@Override
			public void written() {
				handed.addAndGet(-bytes);
				pump();
			}

			@Override
			public void failed(Throwable cause) {
				handed.addAndGet(-bytes);
				pump();
			}
		}
	}
}
