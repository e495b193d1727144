package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.BiConsumer;

import io.kvferry.DisaggregationMode;
import io.kvferry.HostPort;
import io.kvferry.KVManager;
import io.kvferry.DecodeSpec;
import io.kvferry.KVManagerSpec;
import io.kvferry.DecodeKVManager;
import io.kvferry.PrefillKVManager;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.KVTransferException;
import io.kvferry.ParallelLayout;
import io.kvferry.bootstrap.PrefillRegistration;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.KVTransport;
import io.kvferry.spi.PeerLayout;
import io.kvferry.spi.RegionKind;
import io.kvferry.test.NoopConnectionHandler;
import io.kvferry.test.InMemoryBootstrap;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.transport.local.InMemoryKVTransport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;

/**
 * What a Success and a release promise: a Success only with every byte it reports in place (byte count, and CRC32C
 * when asked for), pages released only when no byte can land any more, and a prefill instance whose ranks do not match
 * what its bootstrap server says is caught at the handshake.
 */
class SuccessAndReleaseTest {

	private static final Duration T = Duration.ofSeconds(10);
	private static final ModelShape SHAPE = new ModelShape(2, 2, 16, 2, 4, false, 0, 64, 0);
	private static final HostPort BOOTSTRAP = new HostPort("127.0.0.1", 8998);
	private static final HostPort ROGUE_BOOTSTRAP = new HostPort("10.0.0.1", 1);

	private final InMemoryBootstrap bootstrap = new InMemoryBootstrap();
	private InMemoryKVTransport transport = InMemoryKVTransport.create();
	private final RankMemory prefillMem = RankMemory.prefill(SHAPE, ParallelLayout.SINGLE, 64, 8, 8);
	private final RankMemory decodeMem = RankMemory.decode(SHAPE, ParallelLayout.SINGLE, 64, 8, 8);
	private final int itemLen = prefillMem.kvArgs().kvRegions().get(0).itemLen();
	private KVTransport.Listener rogue;
	private PrefillKVManager prefill;
	private DecodeKVManager decode;

	@AfterEach
	void close() {
		for (KVManager m : new KVManager[] { prefill, decode }) {
			if (m != null) {
				m.disposeNow(T);
			}
		}
		if (rogue != null) {
			rogue.dispose();
		}
	}

	private DecodeSpec decodeSpec() {
		return KVManagerSpec.decode().kvArgs(decodeMem.kvArgs()).transport(transport)
				.bootstrapClient(bootstrap);
	}

	private void startPrefill(DecodeSpec decodeSpec) {
		prefill = KVManagerSpec.prefill().kvArgs(prefillMem.kvArgs())
				.transport(transport).bootstrapClient(bootstrap).bootstrapAddress(BOOTSTRAP)
				.bindAddress(new HostPort("127.0.0.1", 0)).startNow();
		decode = decodeSpec.startNow();
	}

	/**
	 * A prefill rank that answers the handshake and then does what {@code onRequest} says, over one connection: decode
	 * managers that talk to it use one stripe.
	 */
	private void startRogue(BiConsumer<KVConnection, KVMessage.TransferRequest> onRequest) {
		rogue = transport.listen(new HostPort("127.0.0.1", 0), conn -> new NoopConnectionHandler() {
			@Override
			public void onMessage(KVConnection c, KVMessage m) {
				if (m instanceof KVMessage.Hello) {
					c.send(new KVMessage.HelloAck(PeerLayout.of(prefillMem.kvArgs(), ParallelLayout.SINGLE)));
				}
				else if (m instanceof KVMessage.TransferRequest req) {
					onRequest.accept(c, req);
				}
			}
		}).block(T);
		bootstrap.register(ROGUE_BOOTSTRAP, PrefillRegistration.prefill(ParallelLayout.SINGLE, "127.0.0.1",
				rogue.address().port(), SHAPE.pageSize())).block(T);
	}

	/** One page of region 0 from prefill page 0 to the request's first destination page. */
	private DataBlock onePage(KVMessage.TransferRequest req) {
		return new DataBlock(new DataHeader(req.room(), RegionKind.KV, 0, (long) req.dstPages()[0] * itemLen, itemLen,
				0, 1), prefillMem.kvArgs().kvRegions().get(0).address(), 0);
	}

	@Test
	void aSuccessReportingBytesThatNeverLandedFailsTheRoom() {
		// One page sent, two reported: a lost block and a Success that still went out look exactly like this.
		startRogue((c, req) -> {
			c.send(onePage(req));
			c.send(new KVMessage.Status(req.room(), KVPoll.SUCCESS, 0, "", 2L * itemLen, KVMessage.NO_CHECKSUM));
		});
		decode = decodeSpec().stripes(1).startNow();
		KVReceiver r = decode.receiver(ROGUE_BOOTSTRAP, 1);
		r.sendMetadata(new int[] { 4, 5 }, -1, new int[0]);
		StepVerifier.create(r.completion())
				.expectErrorSatisfies(e -> assertThat(((KVTransferException) e).reason())
						.contains("reported Success for room 1 with " + 2 * itemLen + " bytes sent, but " + itemLen
								+ " landed"))
				.verify(T);
	}

	@Test
	void aSuccessWhoseBytesDoNotMatchTheChecksumFailsTheRoomWhenChecksumsAreOn() {
		startRogue((c, req) -> {
			c.send(onePage(req));
			c.send(new KVMessage.Status(req.room(), KVPoll.SUCCESS, 0, "", itemLen, 0x1234L));
		});
		decode = decodeSpec().checksums(true).stripes(1).startNow();
		KVReceiver r = decode.receiver(ROGUE_BOOTSTRAP, 2);
		r.sendMetadata(new int[] { 6 }, -1, new int[0]);
		StepVerifier.create(r.completion())
				.expectErrorSatisfies(e -> assertThat(((KVTransferException) e).reason())
						.contains("with CRC32C 0x00001234, but the bytes that landed have 0x"))
				.verify(T);
	}

	@Test
	void aStatusFromARankThatDoesNotServeTheRoomCountsForNothingThere() {
		startPrefill(decodeSpec().stripes(1));
		// Another instance's rank reports Success for room 10, which it was never asked for, then serves its own room.
		startRogue((c, req) -> {
			c.send(new KVMessage.Status(10, KVPoll.SUCCESS, 0, "", 0, KVMessage.NO_CHECKSUM));
			int buffers = prefillMem.kvArgs().kvRegions().size();
			for (int r = 0; r < buffers; r++) {
				c.send(new DataBlock(new DataHeader(req.room(), RegionKind.KV, r, (long) req.dstPages()[0] * itemLen,
						itemLen, 0, 1), prefillMem.kvArgs().kvRegions().get(r).address(), 0));
			}
			c.send(new KVMessage.Status(req.room(), KVPoll.SUCCESS, 0, "", (long) buffers * itemLen,
					KVMessage.NO_CHECKSUM));
		});
		KVReceiver honest = decode.receiver(BOOTSTRAP, 10);
		honest.sendMetadata(new int[] { 3 }, 1, new int[0]);
		KVSender sender = prefill.sender(10);
		KVReceiver other = decode.receiver(ROGUE_BOOTSTRAP, 11);
		other.sendMetadata(new int[] { 4 }, -1, new int[0]);
		// The stray report is its sender's fault: the rank is cut off, and its own room with it.
		StepVerifier.create(other.completion())
				.expectErrorSatisfies(e -> assertThat(((KVTransferException) e).reason())
						.contains("sent a report on room 10, which decode did not ask it for"))
				.verify(T);
		assertThat(honest.poll()).isEqualTo(KVPoll.WAITING_FOR_INPUT);
		prefillMem.fill(10, new int[] { 5 }, 0, new int[0]);
		sender.init(1, 0);
		sender.send(new int[] { 5 }, new int[0]);
		StepVerifier.create(honest.completion()).verifyComplete();
		assertThat(decodeMem.verify(10, new int[] { 3 }, 1, new int[0])).isNull();
	}

	@Test
	void bytesFromARankTheRoomNeverAskedAreThatRanksFaultAndDoNotLand() {
		startPrefill(decodeSpec().handshakeTimeout(Duration.ofSeconds(1)).stripes(1));
		startRogue((c, req) -> {
			// Into room 12's page 3, which only prefill A was asked for.
			c.send(new DataBlock(new DataHeader(12, RegionKind.KV, 0, 3L * itemLen, itemLen, 0, 1),
					prefillMem.kvArgs().kvRegions().get(0).address(), 0));
		});
		KVReceiver victim = decode.receiver(BOOTSTRAP, 12);
		victim.sendMetadata(new int[] { 3 }, -1, new int[0]);
		StepVerifier.create(victim.states()).thenConsumeWhile(st -> st != KVPoll.WAITING_FOR_INPUT)
				.expectNext(KVPoll.WAITING_FOR_INPUT).thenCancel().verify(T);
		prefillMem.fill(13, new int[] { 0 }, 0, new int[0]);
		KVReceiver rogues = decode.receiver(ROGUE_BOOTSTRAP, 13);
		rogues.sendMetadata(new int[] { 9 }, -1, new int[0]);
		StepVerifier.create(rogues.completion())
				.expectErrorSatisfies(e -> assertThat(((KVTransferException) e).reason())
						.contains("sent data for room 12 on stripe 0, which decode did not ask it for"))
				.verify(T);
		assertThat(decodeMem.isZero(new int[] { 3 })).isTrue();
		assertThat(victim.poll()).as("not the victim's fault").isEqualTo(KVPoll.WAITING_FOR_INPUT);
		prefillMem.fill(12, new int[] { 1 }, -1, new int[0]);
		KVSender sender = prefill.sender(12);
		sender.init(1, -1);
		sender.send(new int[] { 1 }, new int[0]);
		StepVerifier.create(victim.completion()).verifyComplete();
		assertThat(decodeMem.verify(12, new int[] { 3 }, -1, new int[0])).isNull();
	}

	@Test
	void checksummedTransfersSucceedAndMatchByteForByte() {
		startPrefill(decodeSpec().checksums(true));
		int[] src = { 1, 2, 3 };
		prefillMem.fill(3, src, 0, new int[0]);
		KVReceiver r = decode.receiver(BOOTSTRAP, 3);
		r.sendMetadata(new int[] { 10, 11, 30 }, 2, new int[0]);
		KVSender s = prefill.sender(3);
		s.init(3, 0);
		s.send(src, new int[0]);
		StepVerifier.create(r.completion()).verifyComplete();
		assertThat(decodeMem.verify(3, new int[] { 10, 11, 30 }, 2, new int[0])).isNull();
	}

	@Test
	void aStaleBootstrapServerIsCaughtAtTheHandshakeAndForgottenForTheNextRoom() {
		startPrefill(decodeSpec());
		// The bootstrap server still describes an earlier prefill instance of TP 2 whose rank 0 is now this TP 1 rank.
		HostPort stale = new HostPort("10.0.0.2", 1);
		bootstrap.register(stale, PrefillRegistration.prefill(ParallelLayout.tp(2, 0), "127.0.0.1",
				prefill.endpoint().port(), SHAPE.pageSize())).block(T);
		bootstrap.register(stale, PrefillRegistration.prefill(ParallelLayout.tp(2, 1), "127.0.0.1",
				prefill.endpoint().port(), SHAPE.pageSize())).block(T);
		KVReceiver r = decode.receiver(stale, 4);
		StepVerifier.create(r.completion())
				.expectErrorSatisfies(e -> assertThat(((KVTransferException) e).reason())
						.contains("runs attn_tp_size=1 dp_size=1 pp_size=1 page_size=4")
						.contains("described the instance as attn_tp_size=2 dp_size=1 pp_size=1 page_size=4"))
				.verify(T);
		// Restarted, the bootstrap server learns the instance as it is: the next room resolves it afresh.
		bootstrap.reset();
		bootstrap.register(stale, PrefillRegistration.prefill(ParallelLayout.SINGLE, "127.0.0.1",
				prefill.endpoint().port(), SHAPE.pageSize())).block(T);
		prefillMem.fill(5, new int[] { 7 }, 0, new int[0]);
		KVReceiver again = decode.receiver(stale, 5);
		again.sendMetadata(new int[] { 8 }, 1, new int[0]);
		KVSender s = prefill.sender(5);
		s.init(1, 0);
		s.send(new int[] { 7 }, new int[0]);
		StepVerifier.create(again.completion()).verifyComplete();
	}

	@Test
	void anAbortFromTheRoomsOwnCallbackReleasesThePagesOnlyAfterPrefillAcknowledged() {
		// Deliveries and callbacks wait in queues until the test runs them, so "before the ack" can be looked at.
		ConcurrentLinkedQueue<Runnable> deliveries = new ConcurrentLinkedQueue<>();
		ConcurrentLinkedQueue<Runnable> callbacks = new ConcurrentLinkedQueue<>();
		Runnable deliver = () -> drain(deliveries);
		transport = InMemoryKVTransport.create(Schedulers.fromExecutor(deliveries::add));
		startPrefill(decodeSpec().callbackScheduler(Schedulers.fromExecutor(callbacks::add)));
		KVReceiver r = decode.receiver(BOOTSTRAP, 6);
		r.sendMetadata(new int[] { 1, 2 }, -1, new int[0]);
		KVSender s = prefill.sender(6);
		CompletableFuture<Void> fromCallback = new CompletableFuture<>();
		r.states().filter(st -> st == KVPoll.TRANSFERRING).take(1).subscribe(st -> {
			r.abort("client went away");
			fromCallback.complete(null);
		});
		for (int i = 0; i < 10 && s.poll() != KVPoll.WAITING_FOR_INPUT; i++) {
			deliver.run();
		}
		s.init(2, -1);
		s.send(new int[] { 0 }, new int[0]);
		for (int i = 0; i < 10 && r.poll() != KVPoll.TRANSFERRING; i++) {
			deliver.run();
		}
		// Prefill is writing the room when the room's own callback aborts it.
		drain(callbacks);
		assertThat(fromCallback).as("aborted from the callback").isDone();
		CompletableFuture<Void> released = r.completion().toFuture();
		assertThat(r.poll()).isEqualTo(KVPoll.FAILED);
		assertThat(s.poll()).isEqualTo(KVPoll.TRANSFERRING);
		drain(callbacks);
		assertThat(released).as("prefill has not acknowledged yet").isNotDone();
		deliver.run();
		drain(callbacks);
		assertThat(released).as("acknowledged").isCompletedExceptionally();
		assertThat(s.poll()).isEqualTo(KVPoll.FAILED);
		closeFlushing(() -> {
			deliver.run();
			drain(callbacks);
		});
	}

	private static void drain(ConcurrentLinkedQueue<Runnable> queue) {
		Runnable task;
		while ((task = queue.poll()) != null) {
			task.run();
		}
	}

	@Test
	void aPrefillRankThatFailsMakesDecodeAbortTheOtherRanksThatStreamTheRoom() {
		// Prefill TP 2, non-MLA, decode TP 1: both prefill ranks write their heads of every page.
		ModelShape shape = new ModelShape(2, 2, 16, 2, 4, false, 0, 64, 0);
		List<RankMemory> mems = List.of(RankMemory.prefill(shape, ParallelLayout.tp(2, 0), 16, 4, 4),
				RankMemory.prefill(shape, ParallelLayout.tp(2, 1), 16, 4, 4));
		PrefillKVManager[] ranks = new PrefillKVManager[2];
		for (int i = 0; i < 2; i++) {
			ranks[i] = KVManagerSpec.prefill().kvArgs(mems.get(i).kvArgs())
					.layout(ParallelLayout.tp(2, i)).transport(transport).bootstrapClient(bootstrap)
					.bootstrapAddress(BOOTSTRAP).bindAddress(new HostPort("127.0.0.1", 0)).startNow();
		}
		try {
			decode = KVManagerSpec.decode()
					.kvArgs(RankMemory.decode(shape, ParallelLayout.SINGLE, 16, 4, 4).kvArgs()).transport(transport)
					.bootstrapClient(bootstrap).startNow();
			KVReceiver r = decode.receiver(BOOTSTRAP, 7);
			r.sendMetadata(new int[] { 1 }, 0, new int[0]);
			KVSender failing = ranks[0].sender(7);
			KVSender streaming = ranks[1].sender(7);
			StepVerifier.create(streaming.states()).thenConsumeWhile(st -> st != KVPoll.WAITING_FOR_INPUT)
					.expectNext(KVPoll.WAITING_FOR_INPUT).thenCancel().verify(T);
			failing.abort("out of memory");
			StepVerifier.create(failing.completion()).expectError(KVTransferException.class).verify(T);
			StepVerifier.create(streaming.completion())
					.expectErrorSatisfies(e -> assertThat(((KVTransferException) e).reason()).contains("Aborted by decode")
							.contains("out of memory"))
					.verify(T);
			StepVerifier.create(r.completion())
					.expectErrorSatisfies(e -> assertThat(((KVTransferException) e).isFromAnotherRank()).isTrue())
					.verify(T);
		}
		finally {
			for (KVManager m : ranks) {
				m.disposeNow(T);
			}
		}
	}

	@Test
	void anAbortedSendersCompletionErrorsOnlyOnceDecodeWasTold() {
		ConcurrentLinkedQueue<Runnable> pending = new ConcurrentLinkedQueue<>();
		Runnable flush = () -> {
			Runnable task;
			while ((task = pending.poll()) != null) {
				task.run();
			}
		};
		transport = InMemoryKVTransport.create(Schedulers.fromExecutor(pending::add));
		startPrefill(decodeSpec());
		KVReceiver r = decode.receiver(BOOTSTRAP, 8);
		r.sendMetadata(new int[] { 1 }, -1, new int[0]);
		KVSender s = prefill.sender(8);
		for (int i = 0; i < 10 && s.poll() != KVPoll.WAITING_FOR_INPUT; i++) {
			flush.run();
		}
		s.abort("prefill gave up");
		assertThat(s.poll()).as("failed by the call itself").isEqualTo(KVPoll.FAILED);
		// The failure is still queued for decode: the room's source pages may still be read, so no error yet.
		StepVerifier.create(s.completion()).expectSubscription().expectNoEvent(Duration.ofMillis(300)).thenCancel()
				.verify(T);
		CompletableFuture<Void> handedOff = s.completion().toFuture();
		flush.run();
		assertThat(handedOff).failsWithin(T).withThrowableOfType(java.util.concurrent.ExecutionException.class)
				.withCauseInstanceOf(KVTransferException.class);
		for (int i = 0; i < 10 && r.poll() != KVPoll.FAILED; i++) {
			flush.run();
		}
		assertThat(r.poll()).isEqualTo(KVPoll.FAILED);
		closeFlushing(flush);
	}

	/** Closing waits for the connections' ends, which are deliveries on the flushed scheduler too. */
	private void closeFlushing(Runnable flush) {
		CompletableFuture<Void> closed = KVManagerBehaviourTest.closing(prefill, decode).toFuture();
		assertThat(closed).as("disposal waits until the connections closed").isNotDone();
		for (int i = 0; i < 10 && !closed.isDone(); i++) {
			flush.run();
		}
		assertThat(closed).succeedsWithin(T);
		prefill = null;
		decode = null;
	}
}
