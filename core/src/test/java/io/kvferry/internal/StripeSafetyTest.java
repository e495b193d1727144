package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.function.UnaryOperator;

import io.kvferry.DecodeKVManager;
import io.kvferry.DecodeSpec;
import io.kvferry.FailureCause;
import io.kvferry.HostPort;
import io.kvferry.KVManager;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.KVTransferException;
import io.kvferry.MemoryRegion;
import io.kvferry.ParallelLayout;
import io.kvferry.PrefillKVManager;
import io.kvferry.PrefillSpec;
import io.kvferry.spi.CloseReason;
import io.kvferry.spi.ConnectionHandler;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.KVTransport;
import io.kvferry.spi.PayloadSink;
import io.kvferry.spi.RegionKind;
import io.kvferry.test.InMemoryBootstrap;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.transport.local.InMemoryKVTransport;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

/**
 * What striping must not break: a Success is judged only once every stripe's bytes landed, a fence that does not match
 * what landed on its stripe fails the room naming the stripe, an abort completes only when every stripe acknowledged
 * it, and one stripe closing ends the whole session. Decode's further stripes are held back or tampered with by a
 * transport wrapper, as a slow or lying connection would.
 */
class StripeSafetyTest {

	private static final Duration T = Duration.ofSeconds(10);
	private static final ModelShape SHAPE = new ModelShape(2, 2, 16, 2, 4, false, 0, 64, 0);
	private static final HostPort BOOTSTRAP = new HostPort("127.0.0.1", 8998);

	private final InMemoryBootstrap bootstrap = new InMemoryBootstrap();
	private final InMemoryKVTransport inner = InMemoryKVTransport.create();
	private final StripeTap transport = new StripeTap(inner);
	private final RankMemory prefillMem = RankMemory.prefill(SHAPE, ParallelLayout.SINGLE, 64, 8, 8);
	private final RankMemory decodeMem = RankMemory.decode(SHAPE, ParallelLayout.SINGLE, 64, 8, 8);
	private PrefillKVManager prefill;
	private DecodeKVManager decode;

	@AfterEach
	void close() {
		transport.releaseAll();
		for (KVManager m : new KVManager[] { prefill, decode }) {
			if (m != null) {
				m.disposeNow(T);
			}
		}
	}

	/** Starts both ranks; prefill deals every room over the stripes from its first byte, as a large room is. */
	private void start(int stripes, UnaryOperator<DecodeSpec> custom) {
		start(stripes, custom, 0);
	}

	private void start(int stripes, UnaryOperator<DecodeSpec> custom, long firstStripeBytes) {
		prefill = KVManagerSpec.prefill().kvArgs(prefillMem.kvArgs()).transport(transport).bootstrapClient(bootstrap)
				.bootstrapAddress(BOOTSTRAP).bindAddress(new HostPort("127.0.0.1", 0))
				.firstStripeBytes(firstStripeBytes).startNow();
		decode = custom.apply(KVManagerSpec.decode().kvArgs(decodeMem.kvArgs()).transport(transport)
				.bootstrapClient(bootstrap).stripes(stripes)).startNow();
	}

	/** Opens a room of {@code pages} on both sides and feeds its sender; returns decode's receiver. */
	private KVReceiver[] room(long room, int[] src, int[] dst, int aux) {
		prefillMem.fill(room, src, aux, new int[0]);
		KVReceiver receiver = decode.receiver(BOOTSTRAP, room);
		receiver.sendMetadata(dst, aux, new int[0]);
		KVSender sender = prefill.sender(room);
		sender.init(src.length, aux);
		sender.send(src, new int[0]);
		return new KVReceiver[] { receiver };
	}

	@Test
	void aSuccessWaitsForTheBytesOfAHeldBackStripe() {
		start(2, UnaryOperator.identity());
		// Warm the session up, then hold stripe 1 back.
		warmUp();
		Tap stripe1 = transport.decodeStripe(1);
		stripe1.hold();
		int[] src = { 1, 2, 3, 4 };
		int[] dst = { 10, 11, 12, 13 };
		KVReceiver r = room(7, src, dst, 1)[0];
		// The Success on stripe 0 arrived and was read: stripe 1's bytes still wait.
		StepVerifier.create(transport.decodeStripe(0).statuses().filter(s -> s.room() == 7).next())
				.expectNextMatches(s -> s.status() == KVPoll.SUCCESS)
				.expectComplete()
				.verify(T);
		assertThat(stripe1.heldFrames()).as("frames held on stripe 1").isPositive();
		assertThat(r.poll()).isEqualTo(KVPoll.TRANSFERRING);
		assertThat(decodeMem.verify(7, dst, 1, new int[0])).as("stripe 1's share has not landed").isNotNull();
		stripe1.release();
		StepVerifier.create(r.completion()).expectComplete().verify(T);
		assertThat(decodeMem.verify(7, dst, 1, new int[0])).isNull();
	}

	@Test
	void bytesOnStripeZeroAfterItsSuccessFailTheRoom() {
		start(2, UnaryOperator.identity());
		warmUp();
		// Stripe 1's fence waits, so the room is still judging when stripe 0 goes on writing.
		Tap stripe1 = transport.decodeStripe(1);
		stripe1.hold();
		int[] dst = { 50, 51 };
		KVReceiver r = room(12, new int[] { 1, 2 }, dst, 4)[0];
		Tap stripe0 = transport.decodeStripe(0);
		StepVerifier.create(stripe0.statuses().filter(s -> s.room() == 12).next())
				.expectNextMatches(s -> s.status() == KVPoll.SUCCESS)
				.expectComplete()
				.verify(T);
		// A frame of the room on stripe 0 after its Success, inside the room's pages: the write check alone allows it.
		long itemLen = decodeMem.kvArgs().kvRegions().get(0).itemLen();
		assertThat(stripe0.inject(new DataHeader(12, RegionKind.KV, 0, dst[0] * itemLen, 8, 8, 1)))
				.as("where the late frame would land").isNull();
		stripe1.release();
		StepVerifier.create(r.completion())
				.expectErrorSatisfies(e -> {
					KVTransferException k = (KVTransferException) e;
					assertThat(k.failureCause()).isEqualTo(FailureCause.PROTOCOL);
					assertThat(k.reason()).contains("sent bytes of room 12 on stripe 0 after its Success");
				})
				.verify(T);
	}

	@Test
	void aPageWrittenAgainOnAnotherStripeFailsTheRoomWhateverTheCounts() {
		start(2, d -> d.checksums(true));
		warmUp();
		Tap stripe1 = transport.decodeStripe(1);
		stripe1.hold();
		int[] dst = { 20, 21 };
		KVReceiver r = room(14, new int[] { 1, 2 }, dst, -1)[0];
		StepVerifier.create(transport.decodeStripe(0).statuses().filter(s -> s.room() == 14).next())
				.expectNextMatches(s -> s.status() == KVPoll.SUCCESS)
				.expectComplete()
				.verify(T);
		// Page 20 of buffer 0 once more on stripe 1: refused at once if its bytes already landed on stripe 0, else the
		// block that carries them is refused when stripe 1 goes on.
		long itemLen = decodeMem.kvArgs().kvRegions().get(0).itemLen();
		stripe1.inject(new DataHeader(14, RegionKind.KV, 0, dst[0] * itemLen, (int) itemLen, 0, 1));
		stripe1.release();
		StepVerifier.create(r.completion())
				.expectErrorSatisfies(e -> {
					KVTransferException k = (KVTransferException) e;
					assertThat(k.failureCause()).isEqualTo(FailureCause.PROTOCOL);
					assertThat(k.reason()).contains("KV item 20 of region 0: bytes [0, " + itemLen + ") written twice");
				})
				.verify(T);
	}

	@Test
	void aRoomPrefillGivesUpOnSendsAMessageBehindItsFramesOnEveryStripe() {
		start(2, UnaryOperator.identity());
		warmUp();
		// Decode never hears of the failure on stripe 0, so it sends no Abort whose acks would reach stripe 1 anyway.
		transport.decodeStripe(0).tamper(m -> m instanceof KVMessage.Status st && st.room() == 13
				&& st.status() == KVPoll.FAILED ? new KVMessage.AbortAck(Long.MAX_VALUE) : m);
		AtomicInteger acks = new AtomicInteger();
		transport.decodeStripe(1).tamper(m -> {
			if (m instanceof KVMessage.AbortAck a && a.room() == 13) {
				acks.incrementAndGet();
			}
			return m;
		});
		int[] src = { 1, 2, 3, 4 };
		prefillMem.fill(13, src, 5, new int[0]);
		KVReceiver r = decode.receiver(BOOTSTRAP, 13);
		r.sendMetadata(new int[] { 52, 53, 54, 55 }, 5, new int[0]);
		KVSender sender = prefill.sender(13);
		StepVerifier.create(sender.states()).thenConsumeWhile(st -> st != KVPoll.WAITING_FOR_INPUT)
				.expectNext(KVPoll.WAITING_FOR_INPUT).thenCancel().verify(T);
		sender.init(src.length * 2, 5);
		sender.send(src, new int[0]);
		// Handed off only once a message queued after the room's frames was written on stripe 1 as well.
		sender.abort("the engine gave up");
		StepVerifier.create(sender.completion()).expectError(KVTransferException.class).verify(T);
		StepVerifier.create(Flux.interval(Duration.ofMillis(5)).filter(i -> acks.get() > 0).next())
				.expectNextCount(1).expectComplete().verify(T);
		r.abort("test over");
	}

	@Test
	void aFenceWhoseByteCountDoesNotMatchFailsTheRoomNamingTheStripe() {
		start(3, UnaryOperator.identity());
		warmUp();
		transport.decodeStripe(2).tamper(m -> m instanceof KVMessage.Fence f && f.room() == 8
				? new KVMessage.Fence(f.room(), f.bytes() + 1, f.checksum()) : m);
		KVReceiver r = room(8, new int[] { 1, 2, 3 }, new int[] { 20, 21, 22 }, 2)[0];
		StepVerifier.create(r.completion())
				.expectErrorSatisfies(e -> {
					KVTransferException k = (KVTransferException) e;
					assertThat(k.failureCause()).isEqualTo(FailureCause.INCOMPLETE);
					assertThat(k.reason()).contains("reported a fence for room 8 with").contains("on stripe 2")
							.contains("landed");
				})
				.verify(T);
	}

	@Test
	void aFenceWhoseChecksumDoesNotMatchFailsTheRoomNamingTheStripe() {
		start(2, d -> d.checksums(true));
		warmUp();
		transport.decodeStripe(1).tamper(m -> m instanceof KVMessage.Fence f && f.room() == 9
				? new KVMessage.Fence(f.room(), f.bytes(), f.checksum() ^ 1) : m);
		KVReceiver r = room(9, new int[] { 1, 2 }, new int[] { 30, 31 }, 3)[0];
		StepVerifier.create(r.completion())
				.expectErrorSatisfies(e -> assertThat(((KVTransferException) e).reason())
						.contains("reported a fence for room 9 with CRC32C").contains("on stripe 1"))
				.verify(T);
	}

	@Test
	void anAbortCompletesOnlyOnceEveryStripeAcknowledgedAndNothingLandsAfterIt() {
		start(2, UnaryOperator.identity());
		warmUp();
		Tap stripe1 = transport.decodeStripe(1);
		stripe1.hold();
		int[] src = { 1, 2, 3, 4, 5, 6 };
		int[] dst = { 40, 41, 42, 43, 44, 45 };
		prefillMem.fill(11, src, 0, new int[0]);
		KVReceiver r = decode.receiver(BOOTSTRAP, 11);
		r.sendMetadata(dst, -1, new int[0]);
		KVSender sender = prefill.sender(11);
		StepVerifier.create(sender.states()).thenConsumeWhile(s -> s != KVPoll.WAITING_FOR_INPUT)
				.expectNext(KVPoll.WAITING_FOR_INPUT).thenCancel().verify(T);
		sender.init(src.length * 2, -1);
		// Half the room: its blocks on stripe 1 are on their way (headers read, payloads held).
		sender.send(src, new int[0]);
		StepVerifier.create(Flux.interval(Duration.ofMillis(5)).filter(i -> stripe1.heldFrames() > 0).next())
				.expectNextCount(1).expectComplete().verify(T);
		r.abort("client went away");
		// Stripe 0 acknowledged at once; stripe 1's acknowledgement waits behind its held bytes.
		StepVerifier.create(sender.completion()).expectError().verify(T);
		StepVerifier.create(r.completion()).expectSubscription().expectNoEvent(Duration.ofMillis(300)).thenCancel()
				.verify(T);
		stripe1.release();
		StepVerifier.create(r.completion()).expectError(KVTransferException.class).verify(T);
		// Every byte stripe 1 delivered after the abort was fenced off: the KV buffers it carried are untouched.
		List<MemoryRegion> kv = decodeMem.kvArgs().kvRegions();
		long untouched = kv.stream().filter(region -> isZero(region, dst)).count();
		assertThat(untouched).as("KV buffers whose pages stripe 1 carried, all zero").isEqualTo(kv.size() / 2);
	}

	private static boolean isZero(MemoryRegion region, int[] pages) {
		for (int p : pages) {
			ByteBuf view = region.wrap((long) p * region.itemLen(), region.itemLen());
			try {
				for (int i = 0; i < view.readableBytes(); i++) {
					if (view.getByte(i) != 0) {
						return false;
					}
				}
			}
			finally {
				view.release();
			}
		}
		return true;
	}

	@Test
	void aStripeThatClosesMidRoomFailsTheRoomAndClosesTheOthers() {
		start(3, UnaryOperator.identity());
		warmUp();
		int[] src = { 1, 2, 3, 4 };
		KVReceiver r = decode.receiver(BOOTSTRAP, 12);
		prefillMem.fill(12, src, 0, new int[0]);
		r.sendMetadata(new int[] { 50, 51, 52, 53, 54, 55, 56, 57 }, -1, new int[0]);
		KVSender sender = prefill.sender(12);
		sender.init(src.length * 2, -1);
		// Half the room: it stays live, its first bytes landed.
		sender.send(src, new int[0]);
		StepVerifier.create(r.states()).thenConsumeWhile(s -> s != KVPoll.TRANSFERRING)
				.expectNext(KVPoll.TRANSFERRING).thenCancel().verify(T);
		// Cut from prefill's side: decode sees the peer go, as on a broken link. Prefill hears of it only later, so that
		// what closes decode's other stripes is decode itself.
		Tap prefillEnd = transport.prefillTapFor(transport.decodeStripe(1));
		prefillEnd.hold();
		transport.acceptedFor(transport.decodeStripe(1)).close("cable pulled");
		StepVerifier.create(r.completion())
				.expectErrorSatisfies(e -> {
					KVTransferException k = (KVTransferException) e;
					assertThat(k.failureCause()).isEqualTo(FailureCause.CONNECTION_LOST);
					assertThat(k.reason()).contains("Lost connection with prefill rank").contains("cable pulled");
				})
				.verify(T);
		for (int i = 0; i < 3; i++) {
			assertThat(transport.decodeStripe(i).connection().isActive()).as("stripe %d", i).isFalse();
		}
		prefillEnd.release();
		StepVerifier.create(sender.completion())
				.expectErrorSatisfies(e -> assertThat(e).hasMessageContaining("Lost connection with decode"))
				.verify(T);
		StepVerifier.create(Flux.interval(Duration.ofMillis(5)).filter(i -> inner.openConnections() == 0).next())
				.expectNextCount(1).expectComplete().verify(T);
		// A new room opens a fresh session over three new stripes.
		transport.releaseAll();
		int connects = transport.connects();
		KVReceiver again = room(13, new int[] { 5 }, new int[] { 60 }, 4)[0];
		StepVerifier.create(again.completion()).expectComplete().verify(T);
		assertThat(transport.connects()).isEqualTo(connects + 3);
		assertThat(decodeMem.verify(13, new int[] { 60 }, 4, new int[0])).isNull();
	}

	@Test
	void oneStripeIsOneConnectionAndSendsNoFence() {
		start(1, UnaryOperator.identity());
		warmUp();
		assertThat(transport.connects()).isEqualTo(1);
		assertThat(transport.decodeStripe(0).fences()).isZero();
	}

	@Test
	void everyStripeCarriesBytesAndFencesEveryRoom() {
		start(3, UnaryOperator.identity());
		int[] src = { 1, 2, 3, 4, 5, 6, 7, 8 };
		int[] dst = { 8, 9, 10, 11, 12, 13, 14, 15 };
		KVReceiver r = room(14, src, dst, 5)[0];
		StepVerifier.create(r.completion()).expectComplete().verify(T);
		assertThat(decodeMem.verify(14, dst, 5, new int[0])).isNull();
		assertThat(transport.connects()).isEqualTo(3);
		for (int i = 0; i < 3; i++) {
			assertThat(transport.decodeStripe(i).frames()).as("frames on stripe %d", i).isPositive();
		}
		assertThat(transport.decodeStripe(0).fences()).isZero();
		assertThat(transport.decodeStripe(1).fences()).isEqualTo(1);
		assertThat(transport.decodeStripe(2).fences()).isEqualTo(1);
	}

	@Test
	void aSmallRoomCrossesStripeZeroAloneAndItsSuccessNamesNoFence() {
		start(3, UnaryOperator.identity(), PrefillSpec.DEFAULT_FIRST_STRIPE_BYTES);
		KVMessage.Status success = eightPages(14);
		assertThat(transport.decodeStripe(0).frames()).as("frames on stripe 0").isPositive();
		for (int i = 1; i < 3; i++) {
			assertThat(transport.decodeStripe(i).frames()).as("frames on stripe %d", i).isZero();
			assertThat(transport.decodeStripe(i).fences()).as("fences on stripe %d", i).isZero();
		}
		assertThat(success.fences()).isZero();
	}

	@Test
	void aNegativeFirstStripeShareIsRefusedNamingIt() {
		assertThatThrownBy(() -> KVManagerSpec.prefill().firstStripeBytes(-1))
				.isInstanceOf(IllegalArgumentException.class)
				.hasMessage("firstStripeBytes : -1 (expected: >= 0)");
	}

	@Test
	void aRoomLargerThanItsFirstBytesSpreadsTheRestAndNamesTheStripesThatFence() {
		// The first block stays on stripe 0, the rest is dealt evenly.
		start(3, UnaryOperator.identity(), 2 * decodeMem.kvArgs().kvRegions().get(0).itemLen());
		KVMessage.Status success = eightPages(15);
		for (int i = 1; i < 3; i++) {
			assertThat(transport.decodeStripe(i).frames()).as("frames on stripe %d", i).isPositive();
			assertThat(transport.decodeStripe(i).fences()).as("fences on stripe %d", i).isEqualTo(1);
		}
		assertThat(success.fences()).isEqualTo(0b110);
	}

	@Test
	void smallPiecesOfABufferGoInStretchesOnOneStripeAndStillSpreadOverEvery() {
		// Stretches of two pages: after the first on stripe 0, each goes to the stripe with the fewest bytes. Decode's
		// pages are not adjacent, so each page of each buffer is a piece of its own.
		long page = decodeMem.kvArgs().kvRegions().get(0).itemLen();
		start(2, UnaryOperator.identity(), 2 * page);
		int[] dst = { 8, 10, 12, 14, 16, 18, 20, 22 };
		KVReceiver r = room(21, new int[] { 1, 2, 3, 4, 5, 6, 7, 8 }, dst, 0)[0];
		StepVerifier.create(r.completion()).expectComplete().verify(T);
		assertThat(decodeMem.verify(21, dst, 0, new int[0])).isNull();
		// Per buffer, its pieces in page order, each named by the stripe that carried it.
		Map<Integer, TreeMap<Long, Integer>> carried = new TreeMap<>();
		for (int stripe = 0; stripe < 2; stripe++) {
			for (DataHeader h : transport.decodeStripe(stripe).headers()) {
				if (h.room() == 21 && h.kind() == RegionKind.KV) {
					carried.computeIfAbsent(h.region(), k -> new TreeMap<>()).put(h.dstOffset(), stripe);
				}
			}
		}
		assertThat(carried).hasSize(decodeMem.kvArgs().kvRegions().size());
		Set<Integer> used = new HashSet<>();
		carried.forEach((region, pieces) -> {
			assertThat(pieces).as("buffer %d", region).hasSize(dst.length);
			List<Integer> order = List.copyOf(pieces.values());
			used.addAll(order);
			// Runs of two: a stripe keeps a buffer's pieces for a stretch, not piece by piece.
			for (int i = 0; i + 1 < order.size(); i += 2) {
				assertThat(order.get(i + 1)).as("buffer %d, pieces %d and %d", region, i, i + 1)
						.isEqualTo(order.get(i));
			}
		});
		assertThat(used).as("stripes that carried some").containsExactlyInAnyOrder(0, 1);
	}

	@Test
	void aSuccessNamingAFenceOnAStripeTheSessionDoesNotHaveFailsTheRoom() {
		start(2, UnaryOperator.identity(), PrefillSpec.DEFAULT_FIRST_STRIPE_BYTES);
		warmUp();
		// Stripe 2 of a two-stripe session: no fence can ever come from it.
		transport.decodeStripe(0).tamper(namingFences(18, 0b100));
		KVReceiver r = room(18, new int[] { 1, 2 }, new int[] { 30, 31 }, 3)[0];
		StepVerifier.create(r.completion())
				.expectErrorSatisfies(e -> {
					KVTransferException k = (KVTransferException) e;
					assertThat(k.failureCause()).isEqualTo(FailureCause.INCOMPLETE);
					assertThat(k.reason()).contains("named fences for room 18 on stripes 0x4 (expected: among stripes "
							+ "1..1)");
				})
				.verify(T);
	}

	@Test
	void bytesOnAStripeTheSuccessNamedNoFenceOnFailTheRoomWhileItWaitsForAnother() {
		start(3, UnaryOperator.identity(), PrefillSpec.DEFAULT_FIRST_STRIPE_BYTES);
		warmUp();
		// The small room crosses stripe 0 alone; its Success is made to name stripe 1, so the room still waits for a
		// fence there when stripe 2 carries bytes of it: a Success that named no fence on stripe 2 closed that stripe.
		transport.decodeStripe(0).tamper(namingFences(19, 0b010));
		int[] dst = { 40, 41 };
		KVReceiver r = room(19, new int[] { 1, 2 }, dst, 6)[0];
		StepVerifier.create(transport.decodeStripe(0).statuses().filter(s -> s.room() == 19).next())
				.expectNextMatches(s -> s.status() == KVPoll.SUCCESS && s.fences() == 0b010)
				.expectComplete()
				.verify(T);
		assertThat(r.poll()).as("waiting for stripe 1's fence").isEqualTo(KVPoll.TRANSFERRING);
		// Inside the room's pages: the write check alone allows it.
		long itemLen = decodeMem.kvArgs().kvRegions().get(0).itemLen();
		assertThat(transport.decodeStripe(2).inject(new DataHeader(19, RegionKind.KV, 0, dst[0] * itemLen, 8, 8, 1)))
				.as("where the late frame would land").isNull();
		StepVerifier.create(r.completion())
				.expectErrorSatisfies(e -> {
					KVTransferException k = (KVTransferException) e;
					assertThat(k.failureCause()).isEqualTo(FailureCause.PROTOCOL);
					assertThat(k.reason()).contains("sent bytes of room 19 on stripe 2 after its Success, which named "
							+ "no fence there");
				})
				.verify(T);
	}

	/** @return an edit that makes the room's Success name {@code fences} as the stripes that fence it */
	private static Function<KVMessage, KVMessage> namingFences(long room, int fences) {
		return m -> m instanceof KVMessage.Status st && st.room() == room
				? new KVMessage.Status(st.room(), st.status(), st.prefillRank(), st.reason(), st.bytes(), st.checksum(),
						fences)
				: m;
	}

	/** Moves a room of eight pages over three stripes, checks its bytes, and returns the Success decode read. */
	private KVMessage.Status eightPages(long room) {
		int[] dst = { 8, 9, 10, 11, 12, 13, 14, 15 };
		KVReceiver r = room(room, new int[] { 1, 2, 3, 4, 5, 6, 7, 8 }, dst, 5)[0];
		StepVerifier.create(r.completion()).expectComplete().verify(T);
		assertThat(decodeMem.verify(room, dst, 5, new int[0])).isNull();
		assertThat(transport.connects()).isEqualTo(3);
		return transport.decodeStripe(0).statuses().filter(st -> st.room() == room).blockFirst(T);
	}

	@Test
	void aFenceOnAStripeTheSuccessNamesNoneOnFailsTheRoom() {
		start(2, UnaryOperator.identity());
		warmUp();
		// A Success that names no fence on stripe 1, judged after stripe 1's bytes and fence arrived: every byte
		// landed, but the rank did not report what it sent.
		transport.decodeStripe(0).tamper(namingFences(16, 0));
		Tap stripe0 = transport.decodeStripe(0);
		stripe0.hold();
		KVReceiver r = room(16, new int[] { 1, 2, 3, 4 }, new int[] { 20, 21, 22, 23 }, 2)[0];
		Tap stripe1 = transport.decodeStripe(1);
		// This room's own fence (the warm-up fenced stripe 1 too), once decode took it.
		StepVerifier.create(Flux.interval(Duration.ofMillis(5)).filter(i -> stripe1.fenced(16)).next())
				.expectNextCount(1).expectComplete().verify(T);
		stripe0.release();
		StepVerifier.create(r.completion())
				.expectErrorSatisfies(e -> {
					KVTransferException k = (KVTransferException) e;
					assertThat(k.failureCause()).isEqualTo(FailureCause.INCOMPLETE);
					assertThat(k.reason()).contains("fenced room 16 on stripe 1, but its Success named no fence there");
				})
				.verify(T);
	}

	private void warmUp() {
		KVReceiver r = room(1, new int[] { 0 }, new int[] { 63 }, 7)[0];
		StepVerifier.create(r.completion()).expectComplete().verify(T);
	}

	/**
	 * Wraps the in-memory transport: each connection decode opens gets a {@link Tap} on what it receives, in the order
	 * decode opens them (stripe 0 first, then its further stripes).
	 */
	private static final class StripeTap implements KVTransport {
		private final KVTransport inner;
		private final List<Tap> taps = new CopyOnWriteArrayList<>();
		private final List<KVConnection> accepted = new CopyOnWriteArrayList<>();
		private final List<Tap> acceptedTaps = new CopyOnWriteArrayList<>();

		StripeTap(KVTransport inner) {
			this.inner = inner;
		}

		@Override
		public Mono<Listener> listen(HostPort bindAddress, Function<KVConnection, ConnectionHandler> acceptor) {
			return inner.listen(bindAddress, c -> {
				Tap tap = new Tap(acceptor.apply(c));
				tap.connection = c;
				accepted.add(c);
				acceptedTaps.add(tap);
				return tap;
			});
		}

		@Override
		public Mono<KVConnection> connect(HostPort remote, ConnectionHandler handler) {
			Tap tap = new Tap(handler);
			taps.add(tap);
			return inner.connect(remote, tap).doOnNext(c -> tap.connection = c);
		}

		/** @return the tap of stripe {@code i} of the last session decode opened */
		Tap decodeStripe(int i) {
			int stripes = taps.size() - lastSessionStart();
			assertThat(i).as("stripe index").isLessThan(stripes);
			return taps.get(lastSessionStart() + i);
		}

		private int lastSessionStart() {
			// Sessions open their stripes together: every session but the last is closed.
			int start = taps.size() - 1;
			while (start > 0 && taps.get(start).index() != 0) {
				start--;
			}
			return start;
		}

		/** @return prefill's end of the connection of {@code tap} (the in-memory transport accepts as it connects) */
		KVConnection acceptedFor(Tap tap) {
			return accepted.get(taps.indexOf(tap));
		}

		/** @return the tap on prefill's end of the connection of {@code tap} */
		Tap prefillTapFor(Tap tap) {
			return acceptedTaps.get(taps.indexOf(tap));
		}

		int connects() {
			return taps.size();
		}

		void releaseAll() {
			for (Tap t : taps) {
				t.release();
			}
			for (Tap t : acceptedTaps) {
				t.release();
			}
		}
	}

	/**
	 * Decode's side of one connection, between the transport and the engine. Held, it delivers message and payloads
	 * later, in order (a payload's header at once, its bytes copied aside), as a slow connection would; tampering
	 * rewrites messages. Serial like the transport: a lock orders deliveries and the release.
	 */
	private static final class Tap implements ConnectionHandler {
		private final ConnectionHandler engine;
		private final Queue<Runnable> held = new ArrayDeque<>();
		private final List<KVMessage.Status> statuses = new CopyOnWriteArrayList<>();
		private final AtomicInteger frames = new AtomicInteger();
		private final List<DataHeader> headers = new CopyOnWriteArrayList<>();
		// The rooms of the fences decode took from this stripe, in order: each added once decode returned from it.
		private final List<Long> fenced = new CopyOnWriteArrayList<>();
		private volatile Function<KVMessage, KVMessage> tamper = Function.identity();
		private volatile KVConnection connection;
		private volatile int index = -1;
		private boolean holding;
		private int heldFrames;

		Tap(ConnectionHandler engine) {
			this.engine = engine;
		}

		int index() {
			return index;
		}

		KVConnection connection() {
			return connection;
		}

		synchronized void hold() {
			holding = true;
		}

		synchronized int heldFrames() {
			return heldFrames;
		}

		int frames() {
			return frames.get();
		}

		/** @return the data headers decode took from this stripe, a scatter frame's pieces each as one */
		List<DataHeader> headers() {
			return List.copyOf(headers);
		}

		/** @return fences decode took from this stripe; under the lock a delivery holds, so none is half taken */
		synchronized int fences() {
			return fenced.size();
		}

		/** @return whether decode took a fence of {@code room} from this stripe (and acted on it) */
		synchronized boolean fenced(long room) {
			return fenced.contains(room);
		}

		/** Hands decode a frame header as if the peer had sent it on this stripe, now, on the caller's thread. */
		synchronized PayloadSink inject(DataHeader header) {
			return engine.onData(connection, header);
		}

		void tamper(Function<KVMessage, KVMessage> edit) {
			tamper = edit;
		}

		Flux<KVMessage.Status> statuses() {
			return Flux.interval(Duration.ofMillis(5)).concatMapIterable(i -> List.copyOf(statuses)).distinct();
		}

		synchronized void release() {
			holding = false;
			Runnable next;
			while ((next = held.poll()) != null) {
				next.run();
			}
			heldFrames = 0;
		}

		@Override
		public synchronized void onMessage(KVConnection c, KVMessage message) {
			if (message instanceof KVMessage.HelloAck) {
				index = 0;
			}
			else if (message instanceof KVMessage.Joined j) {
				index = j.stripe();
			}
			KVMessage m = tamper.apply(message);
			Runnable deliver = () -> {
				engine.onMessage(c, m);
				if (m instanceof KVMessage.Status s) {
					statuses.add(s);
				}
				else if (m instanceof KVMessage.Fence f) {
					fenced.add(f.room());
				}
			};
			if (holding || !held.isEmpty()) {
				held.add(deliver);
			}
			else {
				deliver.run();
			}
		}

		@Override
		public synchronized PayloadSink onData(KVConnection c, DataHeader header) {
			frames.incrementAndGet();
			headers.add(header);
			PayloadSink sink = engine.onData(c, header);
			if (!holding && held.isEmpty()) {
				return sink;
			}
			heldFrames++;
			List<ByteBuf> copies = new ArrayList<>();
			held.add(() -> {
				for (ByteBuf b : copies) {
					if (sink != null) {
						sink.write(b);
					}
					b.release();
				}
				if (sink != null) {
					sink.complete();
				}
			});
			return new PayloadSink() {
				@Override
				public void write(ByteBuf segment) {
					copies.add(Unpooled.copiedBuffer(segment));
				}

				@Override
				public void complete() {
				}
			};
		}

		@Override
		public synchronized void onClose(KVConnection c, CloseReason reason) {
			if (holding || !held.isEmpty()) {
				held.add(() -> engine.onClose(c, reason));
			}
			else {
				engine.onClose(c, reason);
			}
		}
	}
}
