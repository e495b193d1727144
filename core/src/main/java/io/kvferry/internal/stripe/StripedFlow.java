package io.kvferry.internal.stripe;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

import io.kvferry.internal.ScatterGather;
import io.kvferry.internal.Sends;
import io.kvferry.internal.Stripes;
import io.kvferry.internal.Tally;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.ScatterBlock;
import io.kvferry.spi.SendGate;
import io.kvferry.spi.SendListener;

/**
 * One room's data on one {@link StripedConnection}: its blocks dealt in pieces over the stripes, round robin, and a
 * tally of what each stripe carried. When the room's data is complete, each further stripe carries a fence with what it
 * moved and stripe 0 the closing message with the total, all behind the room's gate: once every one was written, no
 * piece still queued reads the engine's memory.
 *
 * <p>Not thread-safe: fed under the room's monitor, so each stripe's tally follows the order of its connection.
 */
public final class StripedFlow {

	/** Builds the message that closes a room's data on stripe 0. */
	@FunctionalInterface
	public interface Closing {

		/**
		 * @param bytes what the room moved over every stripe
		 * @param checksum the CRC32C of what stripe 0 carried (the fences carry the others')
		 */
		KVMessage of(long bytes, long checksum);
	}

	private final long room;
	private final KVConnection[] stripes;
	private final Tally[] tallies;
	// Per stripe, the small blocks dealt to it, grouped into scatter blocks.
	private final ScatterGather[] gathers;
	private final SendGate gate;
	// The stripe the next piece goes to.
	private int next;

	StripedFlow(long room, KVConnection[] stripes, boolean checksums, SendGate gate) {
		this.room = room;
		this.stripes = stripes;
		this.gate = gate;
		this.tallies = new Tally[stripes.length];
		this.gathers = new ScatterGather[stripes.length];
		for (int i = 0; i < tallies.length; i++) {
			tallies[i] = new Tally(checksums);
			gathers[i] = new ScatterGather(new Stripe(stripes[i], tallies[i]), gate);
		}
	}

	/** @return the gate the room's blocks are sent behind */
	public SendGate gate() {
		return gate;
	}

	/**
	 * Takes a block of the room, cut into pieces when there are several stripes to spread it over. A small piece
	 * waits in its stripe's group until {@link #flush}, and goes with the others of the group as one scatter block.
	 */
	public void send(DataBlock block) {
		if (tallies.length == 1) {
			deal(block);
		}
		else {
			Stripes.cut(block, Stripes.PIECE, this::deal);
		}
	}

	/** Queues every group gathered so far, on its stripe. */
	public void flush() {
		for (ScatterGather g : gathers) {
			g.flush();
		}
	}

	/** Deals a piece to the next stripe, round robin. */
	private void deal(DataBlock piece) {
		int stripe = next;
		next = stripe + 1 == tallies.length ? 0 : stripe + 1;
		gathers[stripe].send(piece);
	}

	/**
	 * Closes the room's data: a fence on every further stripe, then {@code closing} on stripe 0, all gated like the
	 * data (a room stopped meanwhile sends neither its blocks nor these).
	 *
	 * @param written called once, when every one was written
	 * @param failed called for each one that was not
	 */
	public void finish(Closing closing, Runnable written, Consumer<Throwable> failed) {
		// Nothing of the room may follow its fences and Success.
		flush();
		AtomicInteger remaining = new AtomicInteger(tallies.length);
		SendListener listener = Sends.of(() -> {
			if (remaining.decrementAndGet() == 0) {
				written.run();
			}
		}, failed);
		long total = 0;
		for (int i = 1; i < tallies.length; i++) {
			Tally t = tallies[i];
			total += t.bytes();
			stripes[i].send(new KVMessage.Fence(room, t.bytes(), t.checksum()), gate, listener);
		}
		Tally control = tallies[0];
		stripes[0].send(closing.of(total + control.bytes(), control.checksum()), gate, listener);
	}

	/** One stripe's connection, tallying what it was handed in the order it was handed. */
	private record Stripe(KVConnection connection, Tally tally) implements ScatterGather.Out {

		@Override
		public void send(DataBlock block) {
			connection.sendData(block);
			// Counted once the transport took it: a block it refuses is no byte of the total.
			tally.add(block);
		}

		@Override
		public void send(ScatterBlock block) {
			connection.sendScatter(block);
			tally.add(block);
		}
	}
}
