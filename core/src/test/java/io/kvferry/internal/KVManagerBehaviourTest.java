package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;

import io.kvferry.DisaggregationMode;
import io.kvferry.FailureCause;
import io.kvferry.HostPort;
import io.kvferry.KVManager;
import io.kvferry.DecodeSpec;
import io.kvferry.KVManagerSpec;
import io.kvferry.PrefillSpec;
import io.kvferry.spi.CloseReason;
import io.kvferry.DecodeKVManager;
import io.kvferry.PrefillKVManager;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.KVTransferException;
import io.kvferry.ParallelLayout;
import io.kvferry.RoomPriority;
import io.kvferry.RoomRequest;
import io.kvferry.bootstrap.PrefillRegistration;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.PeerLayout;
import io.kvferry.spi.RegionKind;
import io.kvferry.test.NoopConnectionHandler;
import io.kvferry.test.InMemoryBootstrap;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.transport.local.InMemoryKVTransport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;
import reactor.test.scheduler.VirtualTimeScheduler;

/** The engine's rules over the in-memory transport: aborts, failures, timeouts, bad input. */
class KVManagerBehaviourTest {

	private static final Duration T = Duration.ofSeconds(10);
	private static final ModelShape SHAPE = new ModelShape(2, 2, 16, 2, 4, false, 0, 64, 0);
	private static final HostPort BOOTSTRAP = new HostPort("127.0.0.1", 8998);

	private final InMemoryBootstrap bootstrap = new InMemoryBootstrap();
	private InMemoryKVTransport transport = InMemoryKVTransport.create();
	private final RankMemory prefillMem = RankMemory.prefill(SHAPE, ParallelLayout.SINGLE, 64, 8, 8);
	private final RankMemory decodeMem = RankMemory.decode(SHAPE, ParallelLayout.SINGLE, 64, 8, 8);
	private PrefillKVManager prefill;
	private DecodeKVManager decode;

	private void start(UnaryOperator<KVManagerSpec<?, ?>> custom) {
		prefill = ((PrefillSpec) custom.apply(KVManagerSpec.prefill().kvArgs(prefillMem.kvArgs())
				.transport(transport).bootstrapClient(bootstrap).bootstrapAddress(BOOTSTRAP)
				.bindAddress(new HostPort("127.0.0.1", 0)))).startNow();
		decode = ((DecodeSpec) custom.apply(KVManagerSpec.decode().kvArgs(decodeMem.kvArgs())
				.transport(transport).bootstrapClient(bootstrap))).startNow();
	}

	/** @return completes when every manager given is closed and released */
	static reactor.core.publisher.Mono<Void> closing(io.kvferry.KVManager... managers) {
		return reactor.core.publisher.Mono.defer(() -> {
			for (io.kvferry.KVManager m : managers) {
				m.dispose();
			}
			return reactor.core.publisher.Mono.when(java.util.Arrays.stream(managers).map(io.kvferry.KVManager::onDispose)
					.toList());
		});
	}

	/** Waits until a room's state stream reaches {@code state} (it replays the current state first). */
	private static void await(reactor.core.publisher.Flux<KVPoll> states, KVPoll state) {
		StepVerifier.create(states).thenConsumeWhile(s -> s != state).expectNext(state).thenCancel().verify(T);
	}

	@AfterEach
	void close() {
		if (prefill != null) {
			prefill.disposeNow(T);
		}
		if (decode != null) {
			decode.disposeNow(T);
		}
	}

	@Test
	void prefillPublishesRoomsDecodeWaitsFor() {
		start(UnaryOperator.identity());
		StepVerifier.create(prefill.roomRequests())
				.then(() -> decode.receiver(BOOTSTRAP, 5).sendMetadata(new int[] { 3, 4, 9 }, 2, new int[0]))
				.assertNext(r -> assertThat(r).isEqualTo(new RoomRequest(5, 3, 2, false, 0, SHAPE.pageSize())))
				.thenCancel()
				.verify(T);
	}

	@Test
	void requestsThatCameBeforeTheEngineSubscribedWaitForIt() {
		start(UnaryOperator.identity());
		// A decode rank may ask as soon as prefill's listener is bound, before the engine subscribed: a restarted
		// prefill on its old port is found that way by a decode that retries its cached route.
		StepVerifier.create(prefill.events().filter(e -> e.room() == 7))
				.then(() -> decode.receiver(BOOTSTRAP, 7).sendMetadata(new int[] { 3, 4 }, 2, new int[0]))
				// Prefill has the request once its room waits for input.
				.thenConsumeWhile(e -> e.current() != KVPoll.WAITING_FOR_INPUT)
				.expectNextMatches(e -> e.current() == KVPoll.WAITING_FOR_INPUT)
				.thenCancel()
				.verify(T);
		StepVerifier.create(prefill.roomRequests())
				.assertNext(r -> assertThat(r).isEqualTo(new RoomRequest(7, 2, 2, false, 0, SHAPE.pageSize())))
				.then(() -> decode.receiver(BOOTSTRAP, 8).sendMetadata(new int[] { 5 }, 3, new int[0]))
				.assertNext(r -> assertThat(r.room()).as("later requests come after the held ones").isEqualTo(8))
				.thenCancel()
				.verify(T);
	}

	@Test
	void aRoomThatEndedAfterItsRequestWasEmittedButBeforeTheEngineClaimedItGivesASenderBornFailed() {
		start(UnaryOperator.identity());
		KVReceiver receiver = decode.receiver(BOOTSTRAP, 9);
		StepVerifier.create(prefill.roomRequests())
				.then(() -> receiver.sendMetadata(new int[] { 3, 4 }, 2, new int[0]))
				.assertNext(r -> assertThat(r.room()).isEqualTo(9))
				.thenCancel()
				.verify(T);
		// The engine has the request, but decode gives up before the engine gets to it.
		StepVerifier.create(prefill.events().filter(e -> e.room() == 9 && e.current() == KVPoll.FAILED))
				.then(() -> receiver.abort("the request was cancelled"))
				.expectNextCount(1)
				.thenCancel()
				.verify(T);
		KVSender sender = prefill.sender(9);
		assertThat(sender.poll()).isEqualTo(KVPoll.FAILED);
		StepVerifier.create(sender.completion())
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOfSatisfying(KVTransferException.class, x -> {
					assertThat(x.failureCause()).isEqualTo(FailureCause.ABORTED);
					assertThat(x.isFromAnotherRank()).isTrue();
					assertThat(x).hasMessageContaining("the request was cancelled");
				}))
				.verify(T);
		assertThatThrownBy(() -> prefill.sender(9)).as("a room is claimed once")
				.isInstanceOf(IllegalStateException.class);
	}

	@Test
	void aHighPriorityRoomMovesLikeAnyOtherAndItsPriorityIsFixedBeforeInit() {
		start(UnaryOperator.identity());
		int[] pages = { 1, 2 };
		prefillMem.fill(12, pages, 0, new int[0]);
		KVSender sender = prefill.sender(12);
		sender.priority(RoomPriority.HIGH);
		sender.init(2, 0);
		assertThatThrownBy(() -> sender.priority(RoomPriority.NORMAL)).isInstanceOf(IllegalStateException.class)
				.hasMessageContaining("priority : set after init of room 12");
		sender.send(pages, new int[0]);
		KVReceiver receiver = decode.receiver(BOOTSTRAP, 12);
		receiver.sendMetadata(new int[] { 30, 31 }, 6, new int[0]);
		StepVerifier.create(receiver.completion()).expectComplete().verify(T);
		StepVerifier.create(sender.completion()).expectComplete().verify(T);
		assertThat(decodeMem.verify(12, new int[] { 30, 31 }, 6, new int[0])).isNull();
	}

	@Test
	void sendsBeforeDecodeAskedWaitAndThenSucceed() {
		start(UnaryOperator.identity());
		int[] pages = { 1, 2, 3 };
		prefillMem.fill(11, pages, 0, new int[0]);
		KVSender sender = prefill.sender(11);
		sender.init(3, 0);
		sender.send(new int[] { 1 }, new int[0]);
		sender.send(new int[] { 2, 3 }, new int[0]);
		assertThat(sender.poll()).isEqualTo(KVPoll.BOOTSTRAPPING);
		KVReceiver receiver = decode.receiver(BOOTSTRAP, 11);
		receiver.sendMetadata(new int[] { 10, 20, 21 }, 5, new int[0]);
		StepVerifier.create(receiver.states()).thenConsumeWhile(s -> s != KVPoll.SUCCESS).expectNext(KVPoll.SUCCESS)
				.expectComplete().verify(T);
		StepVerifier.create(sender.completion()).verifyComplete();
		assertThat(decodeMem.verify(11, new int[] { 10, 20, 21 }, 5, new int[0])).isNull();
		assertThat(sender.poll()).isEqualTo(KVPoll.SUCCESS);
		assertThat(prefill.status(11)).as("ended rooms are cleared").isNull();
		long expected = 3L * prefillMem.kvArgs().kvRegions().get(0).itemLen() * prefillMem.kvArgs().kvRegions().size()
				+ prefillMem.kvArgs().auxRegions().get(0).itemLen();
		assertThat(prefill.stats().bytesSent()).isEqualTo(expected);
		assertThat(prefill.stats().pagesSent()).isEqualTo(3);
		assertThat(prefill.stats().roomsSucceeded()).isEqualTo(1);
		assertThat(prefill.stats().connections()).isEqualTo(1);
		assertThat(decode.stats().bytesReceived()).isEqualTo(expected);
		assertThat(decode.stats().roomsSucceeded()).isEqualTo(1);
		assertThat(decode.stats().liveRooms()).isEmpty();
	}

	/**
	 * What an abort does to both sides. Whether a byte can land after it is the decode fence's part, tested against a
	 * prefill rank that keeps writing anyway (the rogue of {@code AbortFenceIT}); here prefill plays by the rules.
	 */
	@Test
	void decodeAbortMidTransferFailsPrefillWhichSendsNothingMore() {
		start(UnaryOperator.identity());
		int[] src = { 0, 1, 2, 3 };
		int[] dst = { 4, 5, 6, 7 };
		prefillMem.fill(12, src, 0, new int[0]);
		KVReceiver receiver = decode.receiver(BOOTSTRAP, 12);
		receiver.sendMetadata(dst, 1, new int[0]);
		KVSender sender = prefill.sender(12);
		await(sender.states(), KVPoll.WAITING_FOR_INPUT);
		sender.init(4, 0);
		sender.send(new int[] { 0, 1 }, new int[0]);
		await(receiver.states(), KVPoll.TRANSFERRING);

		receiver.abort("client went away");
		assertThat(receiver.poll()).as("failed by the call itself").isEqualTo(KVPoll.FAILED);
		StepVerifier.create(receiver.completion()).expectError(KVTransferException.class).verify(T);
		StepVerifier.create(sender.completion())
				.expectErrorSatisfies(e -> assertThat(((KVTransferException) e).reason())
						.contains("Aborted by decode").contains("client went away"))
				.verify(T);

		// An engine unaware of the abort feeds the rest of the room: the ended sender sends none of it.
		long sent = prefill.stats().bytesSent();
		sender.send(new int[] { 2, 3 }, new int[0]);
		assertThat(prefill.stats().bytesSent()).isEqualTo(sent);
		assertThat(decodeMem.isZero(new int[] { 6, 7 })).isTrue();
		// Idempotent: a second abort finds the pages released and keeps the first reason.
		receiver.abort("again");
		StepVerifier.create(receiver.completion())
				.expectErrorSatisfies(e -> assertThat(((KVTransferException) e).reason()).contains("client went away")
						.doesNotContain("again"))
				.verify(T);
	}

	@Test
	void prefillAbortRightAfterTheLastChunkNeverLetsDecodeSucceedWithMissingBytes() {
		// Deliveries wait in this queue until flushed, so the abort lands between queueing and writing.
		java.util.concurrent.ConcurrentLinkedQueue<Runnable> pending = new java.util.concurrent.ConcurrentLinkedQueue<>();
		Runnable flush = () -> {
			Runnable task;
			while ((task = pending.poll()) != null) {
				task.run();
			}
		};
		transport = InMemoryKVTransport.create(reactor.core.scheduler.Schedulers.fromExecutor(pending::add));
		start(UnaryOperator.identity());
		int[] pages = { 1, 2 };
		prefillMem.fill(26, pages, 0, new int[0]);
		KVReceiver receiver = decode.receiver(BOOTSTRAP, 26);
		receiver.sendMetadata(new int[] { 3, 4 }, 0, new int[0]);
		KVSender sender = prefill.sender(26);
		for (int i = 0; i < 10 && sender.poll() != KVPoll.WAITING_FOR_INPUT; i++) {
			flush.run();
		}
		assertThat(sender.poll()).isEqualTo(KVPoll.WAITING_FOR_INPUT);
		sender.init(2, 0);
		sender.send(pages, new int[0]);
		// The data and the Success behind them are queued, not yet written: the abort must stop both.
		sender.abort("prefill gave up");
		flush.run();
		flush.run();
		assertThat(receiver.poll()).isEqualTo(KVPoll.FAILED);
		StepVerifier.create(receiver.completion())
				.expectErrorSatisfies(e -> assertThat(e).hasMessageContaining("prefill gave up"))
				.verify(T);
		assertThat(decodeMem.isZero(new int[] { 3, 4 })).isTrue();
		// Closing waits for the connections' ends, which are deliveries too.
		java.util.concurrent.CompletableFuture<Void> closed = closing(prefill, decode).toFuture();
		for (int i = 0; i < 10 && !closed.isDone(); i++) {
			flush.run();
		}
		assertThat(closed).succeedsWithin(T);
		prefill = null;
		decode = null;
	}

	@Test
	void prefillAbortReachesDecodeWithTheReason() {
		start(UnaryOperator.identity());
		KVReceiver receiver = decode.receiver(BOOTSTRAP, 13);
		receiver.sendMetadata(new int[] { 1 }, -1, new int[0]);
		KVSender sender = prefill.sender(13);
		await(sender.states(), KVPoll.WAITING_FOR_INPUT);
		sender.abort("Aborted by AbortReq.");
		StepVerifier.create(sender.completion()).expectError(KVTransferException.class).verify(T);
		StepVerifier.create(receiver.completion())
				.expectErrorSatisfies(e -> {
					KVTransferException k = (KVTransferException) e;
					assertThat(k.room()).isEqualTo(13);
					assertThat(k.reason()).contains("Aborted by AbortReq.");
					assertThat(k.isFromAnotherRank()).isTrue();
				})
				.verify(T);
	}

	@Test
	void lostConnectionFailsLiveRoomsOnBothSides() {
		start(UnaryOperator.identity());
		KVReceiver receiver = decode.receiver(BOOTSTRAP, 14);
		receiver.sendMetadata(new int[] { 1, 2 }, 0, new int[0]);
		KVSender sender = prefill.sender(14);
		await(sender.states(), KVPoll.WAITING_FOR_INPUT);
		transport.disconnectAll(new CloseReason(CloseReason.Kind.SILENT_PEER,
				"no heartbeat from 10.0.0.9:1 for 2 intervals (10 s)"));
		StepVerifier.create(receiver.completion())
				.expectErrorSatisfies(e -> assertThat(e).hasMessageContaining("Lost connection with prefill rank")
						.hasMessageContaining("no heartbeat"))
				.verify(T);
		StepVerifier.create(sender.completion())
				.expectErrorSatisfies(e -> assertThat(e).hasMessageContaining("Lost connection with decode"))
				.verify(T);
		assertThat(decode.stats().heartbeatLosses()).isEqualTo(1);
		assertThat(prefill.stats().heartbeatLosses()).isEqualTo(1);
		// A new room reconnects: nothing stale survives the cut.
		int[] pages = { 7 };
		prefillMem.fill(15, pages, 0, new int[0]);
		KVReceiver again = decode.receiver(BOOTSTRAP, 15);
		again.sendMetadata(new int[] { 30 }, 3, new int[0]);
		KVSender s2 = prefill.sender(15);
		s2.init(1, 0);
		s2.send(pages, new int[0]);
		StepVerifier.create(again.completion()).verifyComplete();
		assertThat(decodeMem.verify(15, new int[] { 30 }, 3, new int[0])).isNull();
	}

	@Test
	void everyWaitingRoomTimesOutOnBothSidesOnVirtualTime() {
		VirtualTimeScheduler vts = VirtualTimeScheduler.create();
		transport = InMemoryKVTransport.create(vts);
		start(s -> s.timer(vts).waitingTimeout(Duration.ofSeconds(30)));
		KVReceiver receiver = decode.receiver(BOOTSTRAP, 16);
		receiver.sendMetadata(new int[] { 1 }, -1, new int[0]);
		vts.advanceTime();
		assertThat(receiver.poll()).isEqualTo(KVPoll.WAITING_FOR_INPUT);
		assertThat(prefill.status(16)).isEqualTo(KVPoll.WAITING_FOR_INPUT);
		vts.advanceTimeBy(Duration.ofSeconds(30));
		assertThat(receiver.poll()).isEqualTo(KVPoll.FAILED);
		StepVerifier.create(receiver.completion())
				.expectErrorSatisfies(e -> assertThat(e).hasMessageContaining("timed out after 30s in KVPoll.WAITING_FOR_INPUT"))
				.verify(T);
		assertThat(prefill.status(16)).as("decode's timeout aborts the room on prefill").isNull();
	}

	@Test
	void bootstrapWithNoPrefillFailsWithTheBootstrapServersAnswer() {
		VirtualTimeScheduler vts = VirtualTimeScheduler.create();
		transport = InMemoryKVTransport.create(vts);
		decode = KVManagerSpec.decode().kvArgs(decodeMem.kvArgs()).transport(transport)
				.bootstrapClient(bootstrap).timer(vts).startNow();
		KVReceiver receiver = decode.receiver(new HostPort("127.0.0.1", 1), 17);
		vts.advanceTimeBy(Duration.ofSeconds(20));
		StepVerifier.create(receiver.completion())
				.expectErrorSatisfies(e -> assertThat(e).hasMessageContaining("Could not bootstrap room 17")
						.hasMessageContaining("not fully registered"))
				.verify(T);
	}

	@Test
	void pageSizesThatCannotBeRepagedFailTheRoomNamingBothValues() {
		start(UnaryOperator.identity());
		DecodeKVManager other = KVManagerSpec.decode()
				.kvArgs(RankMemory.decode(new ModelShape(2, 2, 16, 2, 12, false, 0, 64, 0), ParallelLayout.SINGLE, 8, 2, 2)
						.kvArgs())
				.transport(transport).bootstrapClient(bootstrap).startNow();
		try {
			KVReceiver r = other.receiver(BOOTSTRAP, 18);
			StepVerifier.create(r.completion())
					.expectErrorSatisfies(e -> assertThat(e).hasMessageContaining("prefill page_size=4")
							.hasMessageContaining("decode page_size=12").hasMessageContaining("powers of two"))
					.verify(T);
		}
		finally {
			other.disposeNow(T);
		}
	}

	@Test
	void incompatibleDtypeIsRejectedInTheHandshake() {
		start(UnaryOperator.identity());
		DecodeKVManager other = KVManagerSpec.decode()
				.kvArgs(decodeMem.kvArgs().mutate().dtype("fp8_e4m3").build())
				.transport(transport).bootstrapClient(bootstrap).startNow();
		try {
			KVReceiver r = other.receiver(BOOTSTRAP, 19);
			StepVerifier.create(r.completion())
					.expectErrorSatisfies(e -> assertThat(e)
							.hasMessageContaining("KV cache dtype mismatch: prefill bf16, decode fp8_e4m3"))
					.verify(T);
			assertThat(other.stats().failures()).containsEntry(io.kvferry.FailureCause.INCOMPATIBLE, 1L);
			assertThat(other.stats().roomsFailed()).isEqualTo(1);
		}
		finally {
			other.disposeNow(T);
		}
	}

	@Test
	void misuseGetsClearErrors() {
		start(UnaryOperator.identity());
		KVSender sender = prefill.sender(20);
		assertThatThrownBy(() -> prefill.sender(20)).hasMessageContaining("already has a live sender");
		assertThatThrownBy(() -> sender.send(new int[] { 1 }, new int[0])).hasMessageContaining("send before init");
		sender.init(2, -1);
		assertThatThrownBy(() -> sender.init(2, -1)).hasMessageContaining("init called twice");
		assertThatThrownBy(() -> sender.send(new int[] { 64 }, new int[0]))
				.hasMessage("page index : 64 (expected: 0..63)");
		assertThatThrownBy(() -> sender.send(new int[] { 1, 2, 3 }, new int[0]))
				.hasMessageContaining("more than the 2 given to init");
		KVReceiver receiver = decode.receiver(BOOTSTRAP, 21);
		assertThatThrownBy(() -> receiver.sendMetadata(new int[] { -1 }, 0, new int[0]))
				.hasMessage("page index : -1 (expected: 0..63)");
		assertThatThrownBy(() -> receiver.sendMetadata(new int[] { 64 }, 0, new int[0]))
				.hasMessage("page index : 64 (expected: 0..63)");
		assertThatThrownBy(() -> receiver.sendMetadata(new int[] { 1 }, 8, new int[0]))
				.hasMessage("auxIndex : 8 (expected: 0..7)");
		assertThatThrownBy(() -> receiver.sendMetadata(new int[] { 1 }, 0, new int[] { 1 }))
				.hasMessage("state index given but this rank registered no such buffers");
		receiver.sendMetadata(new int[] { 1 }, 0, new int[0]);
		assertThatThrownBy(() -> receiver.sendMetadata(new int[] { 1 }, 0, new int[0]))
				.hasMessageContaining("sendMetadata called twice");
		assertThatThrownBy(() -> decode.receiver(BOOTSTRAP, 22, -1)).hasMessage("prefillDpRank : -1 (expected: >= 0)");
	}

	@Test
	void anAbortThatArrivesBeforeTheSenderExistsMakesTheSenderFailAtOnce() throws InterruptedException {
		start(UnaryOperator.identity());
		// A decode rank that gave up on room 31 while it was still resolving tells prefill before prefill's engine
		// made the room's sender.
		BlockingQueue<KVMessage> got = new LinkedBlockingQueue<>();
		KVConnection c = transport.connect(prefill.endpoint(), new NoopConnectionHandler() {
			@Override
			public void onMessage(KVConnection conn, KVMessage m) {
				got.add(m);
			}
		}).block(T);
		c.write(new KVMessage.Hello(KVMessage.PROTOCOL_VERSION, PeerLayout.of(decodeMem.kvArgs(),
				ParallelLayout.SINGLE))).block(T);
		assertThat(got.poll(T.toMillis(), TimeUnit.MILLISECONDS)).isInstanceOf(KVMessage.HelloAck.class);
		c.write(new KVMessage.Abort(31, "client went away")).block(T);
		assertThat(got.poll(T.toMillis(), TimeUnit.MILLISECONDS)).isEqualTo(new KVMessage.AbortAck(31));

		KVSender s = prefill.sender(31);
		StepVerifier.create(s.states()).expectNext(KVPoll.FAILED).verifyComplete();
		StepVerifier.create(s.completion())
				.expectErrorSatisfies(e -> assertThat(e).hasMessageContaining("Aborted by decode")
						.hasMessageContaining("client went away"))
				.verify(T);
		assertThat(prefill.stats().failures()).containsEntry(io.kvferry.FailureCause.ABORTED, 1L);
		// The engine's usual calls on the ended room are harmless; the room is not opened twice.
		s.init(1, -1);
		s.send(new int[] { 0 }, new int[0]);
		assertThatThrownBy(() -> prefill.sender(31)).hasMessageContaining("room 31 already ended");
		c.close("done");
	}

	@Test
	void aPrefillWritingOutsideTheRoomsPagesFailsTheRoomAndNothingLands() {
		// A misbehaving prefill rank: accepts the handshake, then writes to a page the room never asked for.
		InMemoryKVTransport.Listener rogue = transport.listen(new HostPort("127.0.0.1", 0), conn -> new NoopConnectionHandler() {
			@Override
			public void onMessage(KVConnection c, KVMessage m) {
				if (m instanceof KVMessage.Hello) {
					c.send(new KVMessage.HelloAck(PeerLayout.of(prefillMem.kvArgs(), ParallelLayout.SINGLE)));
				}
				else if (m instanceof KVMessage.TransferRequest req) {
					int itemLen = prefillMem.kvArgs().kvRegions().get(0).itemLen();
					c.send(new DataBlock(new DataHeader(req.room(), RegionKind.KV, 0, 40L * itemLen, itemLen, 0, 1),
							prefillMem.kvArgs().kvRegions().get(0).address(), 0));
				}
			}
		}).block(T);
		HostPort rogueBootstrap = new HostPort("10.0.0.1", 1);
		bootstrap.register(rogueBootstrap, PrefillRegistration.prefill(ParallelLayout.SINGLE, "127.0.0.1",
				rogue.address().port(), SHAPE.pageSize())).block(T);
		prefillMem.fill(22, new int[] { 0 }, 0, new int[0]);
		// The rogue never acknowledges the abort that follows: its connection is closed after the handshake timeout.
		// It speaks over one connection.
		decode = KVManagerSpec.decode().kvArgs(decodeMem.kvArgs()).transport(transport)
				.bootstrapClient(bootstrap).handshakeTimeout(Duration.ofSeconds(1)).stripes(1).startNow();
		KVReceiver r = decode.receiver(rogueBootstrap, 22);
		r.sendMetadata(new int[] { 1 }, -1, new int[0]);
		StepVerifier.create(r.completion())
				.expectErrorSatisfies(e -> assertThat(e).hasMessageContaining("wrote outside room 22")
						.hasMessageContaining("item 40"))
				.verify(T);
		assertThat(decodeMem.isZero(new int[] { 40 })).isTrue();
		rogue.dispose();
	}

	@Test
	void aRequestOutsideDecodesRegisteredPagesFailsOnlyThatRoom() {
		start(UnaryOperator.identity());
		KVSender sender = prefill.sender(25);
		java.util.concurrent.LinkedBlockingQueue<KVMessage> got = new java.util.concurrent.LinkedBlockingQueue<>();
		KVConnection conn = transport.connect(prefill.endpoint(), new NoopConnectionHandler() {
			@Override
			public void onMessage(KVConnection c, KVMessage m) {
				got.add(m);
			}
		}).block(T);
		conn.send(new KVMessage.Hello(KVMessage.PROTOCOL_VERSION, PeerLayout.of(decodeMem.kvArgs(), ParallelLayout.SINGLE)));
		conn.send(new KVMessage.TransferRequest(25, new int[] { 1, 64 }, 0, new int[0], 1, false));
		StepVerifier.create(sender.completion())
				.expectErrorSatisfies(e -> assertThat(e).hasMessageContaining("destination page 64 outside decode's 0..63"))
				.verify(T);
		StepVerifier.create(reactor.core.publisher.Flux.<KVMessage>generate(sink -> {
			try {
				sink.next(got.take());
			}
			catch (InterruptedException e) {
				sink.error(e);
			}
		}).subscribeOn(reactor.core.scheduler.Schedulers.boundedElastic()).filter(m -> m instanceof KVMessage.Status).next())
				.assertNext(m -> assertThat(((KVMessage.Status) m).status()).isEqualTo(KVPoll.FAILED))
				.expectComplete()
				.verify(T);
		assertThat(conn.isActive()).as("the connection serves other rooms").isTrue();
		conn.close("done");
	}

	@Test
	void aSecondRequestForARoomOnOneConnectionFailsTheRoomInsteadOfTakingAnotherRanksPlace() {
		start(UnaryOperator.identity());
		KVSender sender = prefill.sender(26);
		KVConnection conn = transport.connect(prefill.endpoint(), new NoopConnectionHandler()).block(T);
		conn.send(new KVMessage.Hello(KVMessage.PROTOCOL_VERSION, PeerLayout.of(decodeMem.kvArgs(), ParallelLayout.SINGLE)));
		// Two destinations expected (two decode ranks), both claimed by this one connection.
		conn.send(new KVMessage.TransferRequest(26, new int[] { 1 }, 0, new int[0], 2, false));
		conn.send(new KVMessage.TransferRequest(26, new int[] { 2 }, 0, new int[0], 2, false));
		StepVerifier.create(sender.completion())
				.expectErrorSatisfies(e -> assertThat(e).hasMessageContaining("asked for room 26 twice"))
				.verify(T);
		assertThat(prefill.stats().failures()).containsEntry(io.kvferry.FailureCause.PROTOCOL, 1L);
		conn.close("done");
	}

	@Test
	void closingTheManagerFailsLiveRoomsAndCompletesItsStreams() {
		start(UnaryOperator.identity());
		KVSender sender = prefill.sender(23);
		StepVerifier.create(prefill.events())
				.then(prefill::dispose)
				.assertNext(e -> assertThat(e.reason()).contains("was closed"))
				.verifyComplete();
		StepVerifier.create(sender.states()).expectNext(KVPoll.FAILED).verifyComplete();
		assertThat(prefill.isDisposed()).isTrue();
		assertThatThrownBy(() -> prefill.sender(24)).hasMessageContaining("is closed");
	}
}
