package io.kvferry.internal.stripe;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.zip.CRC32C;

import io.kvferry.HostPort;
import io.kvferry.KVPoll;
import io.kvferry.MemoryRegion;
import io.kvferry.spi.Block;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.NativeMemory;
import io.kvferry.spi.RegionKind;
import io.kvferry.spi.SendGate;
import io.kvferry.spi.SendListener;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.RepetitionInfo;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

/**
 * How one room's pieces go over its stripes when the stripes' connections do not keep the same pace: pieces of a
 * stretch or more go to a stripe that has room in its window and the fewest bytes in flight, each stripe's tally and
 * fence count what it carried, and the closing messages follow every piece.
 */
class StripedFlowTest {

	private static final int MIB = 1 << 20;
	private static final int PIECE = 4 * MIB;

	@Test
	void largePiecesGoToTheStripeThatTakesThemAndTheFencesCountWhatEachCarried() {
		// Stripe 0 never finishes a write until told; stripe 1 finishes each at once, as a faster connection would.
		Stripe slow = new Stripe(false);
		Stripe fast = new Stripe(true);
		StripedFlow flow = sent(5, 10, SendGate.OPEN, slow, fast);
		// The first piece is the room's first bytes, on stripe 0; while it is in flight, the stripe with nothing in
		// flight takes the rest.
		assertThat(slow.blocks).hasSize(1);
		assertThat(fast.blocks).hasSize(9);
		AtomicInteger written = new AtomicInteger();
		finish(flow, 5, written::incrementAndGet);
		assertThat(fast.messages).containsExactly(new KVMessage.Fence(5, 9L * PIECE, KVMessage.NO_CHECKSUM));
		KVMessage.Status closing = (KVMessage.Status) slow.messages.get(0);
		assertThat(closing.bytes()).isEqualTo(10L * PIECE);
		assertThat(closing.fences()).isEqualTo(0b10);
		assertThat(written).hasValue(1);
		slow.finishWrites();
		assertThat(slow.blocks).hasSize(1);
	}

	@Test
	void aSharedPieceGoesToTheStripeWithFewerBytesInFlight() {
		// Two stripes whose writes finish late, as over links slower than their send buffers: a room of two and a half
		// pieces. Stripe 0's window has room for the second piece too, but stripe 1 has nothing in flight.
		Stripe a = new Stripe(false);
		Stripe b = new Stripe(false);
		StripedFlow flow = sent(9, 2, SendGate.OPEN, a, b);
		assertThat(a.blocks).hasSize(1);
		assertThat(b.blocks).hasSize(1);
		// Even in flight, either may take the last half piece.
		flow.send(block(2L * PIECE, PIECE / 2, 4096));
		assertThat(a.blocks.size() + b.blocks.size()).isEqualTo(3);
	}

	@Test
	void theClosingMessagesWaitUntilEveryPieceWasHandedOn() {
		// Both stripes hold their writes: four pieces fill their windows, the rest waits in the room.
		Stripe a = new Stripe(false);
		Stripe b = new Stripe(false);
		StripedFlow flow = sent(6, 6, SendGate.OPEN, a, b);
		assertThat(a.blocks.size() + b.blocks.size()).isEqualTo(4);
		finish(flow, 6, () -> {
		});
		assertThat(a.messages).as("nothing closes the room while pieces of it wait").isEmpty();
		assertThat(b.messages).isEmpty();
		// Stripe b finishes its writes and takes what waited; only then are the room's tallies final.
		b.finishWrites();
		assertThat(a.blocks.size() + b.blocks.size()).isEqualTo(6);
		KVMessage.Status closing = (KVMessage.Status) a.messages.get(0);
		assertThat(closing.bytes()).isEqualTo(6L * PIECE);
		assertThat(b.messages).containsExactly(new KVMessage.Fence(6, (long) b.blocks.size() * PIECE,
				KVMessage.NO_CHECKSUM));
	}

	@Test
	void withChecksumsEachPieceIsDealtInAdvanceAndEachStripesChecksumCoversItsPieces() {
		// Four pieces of distinct bytes, dealt alternately although stripe 0 holds its writes: a shared piece would be
		// its stripe's only once taken, on a transport's thread, and the CRC then with it.
		MemoryRegion source = MemoryRegion.allocate(4, PIECE);
		ByteBuffer bytes = NativeMemory.byteBuffer(source.address(), 4 * PIECE);
		new Random(11).ints(PIECE).forEach(v -> bytes.putInt(v));
		Stripe slow = new Stripe(false);
		Stripe fast = new Stripe(true);
		StripedFlow flow = new StripedFlow(8, new KVConnection[] { slow, fast }, true, SendGate.OPEN, MIB);
		for (int i = 0; i < 4; i++) {
			flow.send(block((long) i * PIECE, PIECE, source.itemAddress(i)));
		}
		finish(flow, 8, () -> {
		});
		assertThat(slow.blocks).extracting(b -> ((DataBlock) b).header().dstOffset()).containsExactly(0L, 2L * PIECE);
		assertThat(fast.blocks).hasSize(2);
		assertThat(fast.messages).containsExactly(new KVMessage.Fence(8, 2L * PIECE, crc(fast.blocks)));
		assertThat(((KVMessage.Status) slow.messages.get(0)).checksum()).isEqualTo(crc(slow.blocks));
		assertThat(crc(fast.blocks)).isNotEqualTo(crc(slow.blocks));
	}

	@Test
	void piecesWaitingInTheRoomAreNeverHandedOnOnceItStopped() {
		AtomicBoolean open = new AtomicBoolean(true);
		Stripe a = new Stripe(false);
		Stripe b = new Stripe(false);
		sent(7, 6, open::get, a, b);
		open.set(false);
		a.finishWrites();
		b.finishWrites();
		assertThat(a.blocks.size() + b.blocks.size()).isEqualTo(4);
	}

	@RepeatedTest(200)
	void withWritesFinishingOnTheStripesOwnThreadsEveryPieceGoesOnceAndEachStripeClosesAfterItsLast(
			RepetitionInfo repetition) throws InterruptedException {
		// Each stripe finishes its writes on a thread of its own, as an event loop does, while the room is still being
		// fed: shared pieces race between the stripes' hand-ons and the caller's.
		ExecutorService[] loops = { Executors.newSingleThreadExecutor(), Executors.newSingleThreadExecutor() };
		try {
			Stripe a = new Stripe(loops[0]);
			Stripe b = new Stripe(loops[1]);
			// The room's pieces are the same in each run of a repetition; only the threads' timing differs.
			Random random = new Random(repetition.getCurrentRepetition());
			int pieces = 2 + random.nextInt(12);
			StripedFlow flow = new StripedFlow(3, new KVConnection[] { a, b }, false, SendGate.OPEN, MIB);
			long total = 0;
			for (int i = 0; i < pieces; i++) {
				int length = MIB + random.nextInt(PIECE - MIB + 1);
				flow.send(block((long) i * PIECE, length, 4096));
				total += length;
			}
			CountDownLatch written = new CountDownLatch(1);
			AtomicInteger writtenCalls = new AtomicInteger();
			finish(flow, 3, () -> {
				writtenCalls.incrementAndGet();
				written.countDown();
			});
			assertThat(written.await(10, TimeUnit.SECONDS)).as("every closing message written").isTrue();
			for (ExecutorService loop : loops) {
				loop.shutdown();
				assertThat(loop.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
			}
			assertThat(writtenCalls).hasValue(1);
			List<Long> offsets = new ArrayList<>();
			for (Stripe s : List.of(a, b)) {
				s.blocks.forEach(x -> offsets.add(((DataBlock) x).header().dstOffset()));
				// Nothing of the room follows a stripe's closing message (a stripe that carried nothing has none).
				if (!s.log.isEmpty()) {
					assertThat(s.log).last().isInstanceOf(KVMessage.class);
				}
			}
			assertThat(offsets).as("each piece handed on once").doesNotHaveDuplicates().hasSize(pieces);
			KVMessage.Status closing = (KVMessage.Status) a.messages.get(0);
			assertThat(closing.bytes()).isEqualTo(total);
			if (b.blocks.isEmpty()) {
				assertThat(b.messages).isEmpty();
				assertThat(closing.fences()).isZero();
			}
			else {
				assertThat(b.messages).containsExactly(new KVMessage.Fence(3, bytes(b.blocks), KVMessage.NO_CHECKSUM));
				assertThat(closing.fences()).isEqualTo(0b10);
			}
		}
		finally {
			for (ExecutorService loop : loops) {
				loop.shutdownNow();
			}
		}
	}

	private static long bytes(List<Block> blocks) {
		return blocks.stream().mapToLong(Block::payloadLength).sum();
	}

	/** @return a room's flow over {@code stripes} (stretches of 1 MiB) that was sent {@code pieces} pieces of 4 MiB */
	private static StripedFlow sent(long room, int pieces, SendGate gate, Stripe... stripes) {
		StripedFlow flow = new StripedFlow(room, stripes, false, gate, MIB);
		for (int i = 0; i < pieces; i++) {
			flow.send(piece(i));
		}
		return flow;
	}

	private static void finish(StripedFlow flow, long room, Runnable written) {
		flow.finish((bytes, checksum, fences) -> new KVMessage.Status(room, KVPoll.SUCCESS, 0, "", bytes, checksum,
				fences), written, e -> {
					throw new AssertionError(e);
				});
	}

	/** @return the CRC32C of the blocks' source bytes, in the order given */
	private static long crc(List<Block> blocks) {
		CRC32C crc = new CRC32C();
		for (Block b : blocks) {
			DataBlock d = (DataBlock) b;
			crc.update(NativeMemory.byteBuffer(d.srcAddress(), (int) d.payloadLength()));
		}
		return crc.getValue();
	}

	private static DataBlock piece(int i) {
		// The tallies keep no checksum here, so the source is never read.
		return block((long) i * PIECE, PIECE, 4096);
	}

	/** @return a contiguous block of room 1: {@code length} bytes from {@code src} to {@code offset} of region 0 */
	private static DataBlock block(long offset, int length, long src) {
		return new DataBlock(new DataHeader(1, RegionKind.KV, 0, offset, length, 0, 1), src, 0);
	}

	/** A stripe's connection: records what it is handed, and finishes block writes at once or when told. */
	private static final class Stripe implements KVConnection {

		final List<Block> blocks = Collections.synchronizedList(new ArrayList<>());
		final List<KVMessage> messages = Collections.synchronizedList(new ArrayList<>());
		// Blocks and messages in the order the stripe was handed them.
		final List<Object> log = Collections.synchronizedList(new ArrayList<>());
		private final List<SendListener> pending = new ArrayList<>();
		private final boolean atOnce;
		private final @Nullable Executor loop;

		Stripe(boolean atOnce) {
			this.atOnce = atOnce;
			this.loop = null;
		}

		/** A stripe that finishes each write later, on {@code loop}. */
		Stripe(Executor loop) {
			this.atOnce = false;
			this.loop = loop;
		}

		void finishWrites() {
			List<SendListener> now = new ArrayList<>(pending);
			pending.clear();
			now.forEach(SendListener::written);
		}

		@Override
		public String id() {
			return "stripe";
		}

		@Override
		public HostPort remoteAddress() {
			return new HostPort("127.0.0.1", 1);
		}

		@Override
		public void send(KVMessage message, SendGate gate, SendListener listener) {
			messages.add(message);
			log.add(message);
			if (loop != null) {
				loop.execute(listener::written);
				return;
			}
			listener.written();
		}

		@Override
		public void send(Block block, SendListener listener) {
			blocks.add(block);
			log.add(block);
			if (loop != null) {
				loop.execute(listener::written);
			}
			else if (atOnce) {
				listener.written();
			}
			else {
				pending.add(listener);
			}
		}

		@Override
		public boolean isActive() {
			return true;
		}

		@Override
		public void close(String reason) {
		}

		@Override
		public Mono<Void> onClose() {
			return Mono.never();
		}
	}
}
