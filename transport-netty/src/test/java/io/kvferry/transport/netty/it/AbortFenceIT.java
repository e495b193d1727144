package io.kvferry.transport.netty.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import io.kvferry.DisaggregationMode;
import io.kvferry.KVManager;
import io.kvferry.KVManagerSpec;
import io.kvferry.DecodeKVManager;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVTransferException;
import io.kvferry.MemoryRegion;
import io.kvferry.ParallelLayout;
import io.kvferry.bootstrap.PrefillRegistration;
import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.PeerLayout;
import io.kvferry.spi.RegionKind;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.transport.netty.NettyKVTransport;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

/**
 * The abort fence against a prefill rank that does not play by the rules: it ignores the abort and keeps writing the
 * room's pages, in the middle of a payload decode had already accepted. Pages are 128 KiB, so decode reads those
 * payloads straight into the room's pages (landing reads): the fence must hold there too. Not one byte written after
 * the abort may land, and the abort completes only when decode closed the connection of a rank that never
 * acknowledged it.
 */
class AbortFenceIT {

	private static final Duration T = Duration.ofSeconds(30);
	// How long decode waits for an abort's acknowledgement before it disconnects the rank: long enough that the control
	// room, asked after the abort on the same connection, ends first even on a busy machine.
	private static final Duration ACK_TIMEOUT = Duration.ofSeconds(8);
	// 128 KiB per page per layer buffer: 64 tokens of 8 heads x 64 x bf16.
	private static final ModelShape SHAPE = new ModelShape(2, 8, 64, 2, 64, false, 0, 64, 0);
	private static final int PAGES = 16;
	private static final byte BEFORE = 0x11;
	private static final byte AFTER = 0x22;

	private DisposableBootstrapServer server;
	private ReactorBootstrapClient client;
	private NettyKVTransport transport;
	private RankMemory decodeMemory;
	private DecodeKVManager decode;

	@BeforeEach
	void start() {
		server = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		client = ReactorBootstrapClient.create();
		transport = NettyKVTransport.create();
		decodeMemory = RankMemory.decode(SHAPE, ParallelLayout.SINGLE, 2 * PAGES, 4, 4);
		// The raw peer speaks over one connection.
		decode = KVManagerSpec.decode().kvArgs(decodeMemory.kvArgs()).stripes(1)
				.transport(transport).bootstrapClient(client).handshakeTimeout(ACK_TIMEOUT).startNow(T);
	}

	@AfterEach
	void stop() {
		decode.disposeNow(T);
		transport.disposeNow(T);
		client.dispose();
		server.disposeNow();
	}

	@Test
	void noByteWrittenAfterTheAbortLandsEvenMidPayloadAndTheAbortEndsWithTheConnection() throws Exception {
		long victim = 1;
		long control = 2;
		int itemLen = SHAPE.itemLen(1);
		int buffers = decodeMemory.kvArgs().kvRegions().size();
		CountDownLatch halfSent = new CountDownLatch(1);
		CompletableFuture<Void> abortSeen = new CompletableFuture<>();
		RawPrefillPeer.Script rogue = new RawPrefillPeer.Script() {
			@Override
			public void onRequest(RawPrefillPeer.Wire wire, KVMessage.TransferRequest req) {
				if (req.room() == victim) {
					// One payload for all of the room's pages in the first K buffer; only its first half for now.
					wire.header(new DataHeader(victim, RegionKind.KV, 0, 0, PAGES * itemLen, 0, 1));
					wire.payload(PAGES / 2 * itemLen, BEFORE).addListener(f -> halfSent.countDown());
				}
				else {
					// The control room's bytes come after everything the rogue wrote for the victim: its page in every
					// KV buffer, as decode's ledger expects.
					long offset = (long) req.dstPages()[0] * itemLen;
					for (int r = 0; r < buffers; r++) {
						wire.data(new DataHeader(control, RegionKind.KV, r, offset, itemLen, 0, 1), (byte) 7);
					}
					wire.send(new KVMessage.Status(control, KVPoll.SUCCESS, 0, "", (long) buffers * itemLen,
							KVMessage.NO_CHECKSUM));
				}
			}

			@Override
			public boolean answersHeartbeats() {
				// Alive to the heartbeat check however slow a busy machine makes the test: only the missing
				// acknowledgement may end the connection.
				return true;
			}

			@Override
			public void onAbort(RawPrefillPeer.Wire wire, KVMessage.Abort abort) {
				// No acknowledgement: the rest of the payload, and then a whole second copy of the room.
				wire.payload(PAGES / 2 * itemLen, AFTER);
				wire.data(new DataHeader(victim, RegionKind.KV, 1, 0, PAGES * itemLen, 0, 1), AFTER);
				abortSeen.complete(null);
			}
		};
		RankMemory prefillMemory = RankMemory.prefill(SHAPE, ParallelLayout.SINGLE, 2 * PAGES, 4, 4);
		try (RawPrefillPeer peer = new RawPrefillPeer(PeerLayout.of(prefillMemory.kvArgs(), ParallelLayout.SINGLE),
				true, rogue)) {
			StepVerifier.create(client.register(server.address(), PrefillRegistration.prefill(ParallelLayout.SINGLE,
					"127.0.0.1", peer.address().port(), SHAPE.pageSize()))).expectComplete().verify(T);

			KVReceiver receiver = decode.receiver(server.address(), victim);
			receiver.sendMetadata(range(0, PAGES), 0, new int[0]);
			StepVerifier.create(receiver.states()).thenConsumeWhile(s -> s != KVPoll.TRANSFERRING)
					.expectNext(KVPoll.TRANSFERRING).thenCancel().verify(T);
			assertThat(halfSent.await(T.toMillis(), TimeUnit.MILLISECONDS)).isTrue();

			long abortedAt = System.nanoTime();
			receiver.abort("client went away");
			// An aborted room's completion errors once its pages are released.
			CompletableFuture<Long> released = receiver.completion()
					.onErrorResume(KVTransferException.class, e -> Mono.empty())
					.then(Mono.fromCallable(System::nanoTime)).toFuture();
			assertThat(abortSeen).succeedsWithin(T);
			// Once the control room succeeded, decode has read every byte the rogue wrote for the victim after the abort.
			KVReceiver check = decode.receiver(server.address(), control);
			check.sendMetadata(new int[] { PAGES + 1 }, -1, new int[0]);
			StepVerifier.create(check.completion()).expectComplete().verify(T);

			assertThat(count(decodeMemory.kvArgs().kvRegions().get(0), PAGES * itemLen, AFTER))
					.as("bytes of the victim's interrupted payload that landed after the abort").isZero();
			assertThat(count(decodeMemory.kvArgs().kvRegions().get(1), PAGES * itemLen, AFTER))
					.as("bytes of the victim's later payload that landed").isZero();
			// No acknowledgement: the pages are safe only once the rank was disconnected for not acknowledging in time.
			long releasedAfter = released.get(T.toMillis(), TimeUnit.MILLISECONDS) - abortedAt;
			assertThat(Duration.ofNanos(releasedAfter)).as("pages released before the acknowledgement timeout")
					.isGreaterThanOrEqualTo(ACK_TIMEOUT);
			StepVerifier.create(receiver.completion())
					.expectErrorSatisfies(e -> assertThat(e).hasMessageContaining("client went away"))
					.verify(T);
			assertThat(peer.disconnected()).as("the rank that never acknowledged was disconnected").succeedsWithin(T);
		}
	}

	private static int[] range(int from, int to) {
		return java.util.stream.IntStream.range(from, to).toArray();
	}

	private static long count(MemoryRegion region, int length, byte value) {
		io.netty.buffer.ByteBuf view = region.wrap(0, length);
		try {
			long n = 0;
			for (int i = 0; i < length; i++) {
				if (view.getByte(i) == value) {
					n++;
				}
			}
			return n;
		}
		finally {
			view.release();
		}
	}
}
