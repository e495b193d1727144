package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.function.BiConsumer;

import io.kvferry.DecodeKVManager;
import io.kvferry.FailureCause;
import io.kvferry.HostPort;
import io.kvferry.KVManager;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.KVTransferException;
import io.kvferry.ParallelLayout;
import io.kvferry.PrefillKVManager;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.RegionKind;
import io.kvferry.test.InMemoryBootstrap;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.test.RoguePrefill;
import io.kvferry.transport.local.InMemoryKVTransport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;

/**
 * A room succeeds only when decode's own ledger of the items it granted says every byte landed exactly once: fewer
 * pages than decode asked for, a prefix that does not match, an aux row never sent, or a page sent twice and another
 * never all fail the room, whether the prefill rank is this library or a peer that reports whatever it likes.
 */
class LedgerVerdictTest {

	private static final Duration T = Duration.ofSeconds(10);
	// 2 layers, MHA: 4 KV buffers of 2 heads × 16 dims × 2 bytes × 4 tokens = 256-byte pages; aux rows of 64 bytes.
	private static final ModelShape SHAPE = new ModelShape(2, 2, 16, 2, 4, false, 0, 64, 0);
	private static final HostPort BOOTSTRAP = new HostPort("127.0.0.1", 8998);
	private static final HostPort ROGUE_BOOTSTRAP = new HostPort("10.0.0.1", 1);

	private final InMemoryBootstrap bootstrap = new InMemoryBootstrap();
	private final InMemoryKVTransport transport = InMemoryKVTransport.create();
	private final RankMemory prefillMem = RankMemory.prefill(SHAPE, ParallelLayout.SINGLE, 64, 8, 8);
	private final RankMemory decodeMem = RankMemory.decode(SHAPE, ParallelLayout.SINGLE, 64, 8, 8);
	private final int itemLen = prefillMem.kvArgs().kvRegions().get(0).itemLen();
	private final int buffers = prefillMem.kvArgs().kvRegions().size();
	private RoguePrefill rogue;
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
			rogue.close();
		}
	}

	private void start() {
		prefill = KVManagerSpec.prefill().kvArgs(prefillMem.kvArgs()).transport(transport).bootstrapClient(bootstrap)
				.bootstrapAddress(BOOTSTRAP).bindAddress(new HostPort("127.0.0.1", 0)).startNow();
		decode = KVManagerSpec.decode().kvArgs(decodeMem.kvArgs()).transport(transport).bootstrapClient(bootstrap)
				.stripes(1).startNow();
	}

	@Test
	void fewerPagesThanDecodeAskedForFailBothSides() {
		start();
		KVReceiver r = decode.receiver(BOOTSTRAP, 1);
		r.sendMetadata(new int[] { 10, 11, 12, 13 }, -1, new int[0]);
		KVSender s = prefill.sender(1);
		s.init(2, -1);
		s.send(new int[] { 0, 1 }, new int[0]);
		StepVerifier.create(s.completion()).expectErrorSatisfies(e -> assertThat(((KVTransferException) e).reason())
				.contains("asked for 4 pages of room 1 after a prefix of 0 pages, but the room has only 2"))
				.verify(T);
		StepVerifier.create(r.completion()).expectError(KVTransferException.class).verify(T);
		assertThat(r.poll()).isEqualTo(KVPoll.FAILED);
		StepVerifier.create(r.layers()).expectComplete().verify(T);
	}

	@Test
	void aPrefixThatLeavesAPageUnwrittenFailsTheRoom() {
		start();
		KVReceiver r = decode.receiver(BOOTSTRAP, 2);
		// Decode holds one page of prefix and asks for 4 after it; the room has only 3 pages in all.
		r.sendMetadata(SHAPE.pageSize(), new int[] { 10, 11, 12, 13 }, -1, new int[][] { new int[0] });
		KVSender s = prefill.sender(2);
		s.init(3, -1);
		s.send(new int[] { 0, 1, 2 }, new int[0]);
		StepVerifier.create(s.completion()).expectErrorSatisfies(e -> assertThat(((KVTransferException) e).reason())
				.contains("asked for 4 pages of room 2 after a prefix of 1 pages, but the room has only 2"))
				.verify(T);
		StepVerifier.create(r.completion()).expectError(KVTransferException.class).verify(T);
	}

	@Test
	void anAuxRowAskedForAndNeverGivenFailsTheRoom() {
		start();
		KVReceiver r = decode.receiver(BOOTSTRAP, 3);
		r.sendMetadata(new int[] { 10 }, 5, new int[0]);
		KVSender s = prefill.sender(3);
		s.init(1, -1);
		s.send(new int[] { 0 }, new int[0]);
		StepVerifier.create(s.completion()).expectErrorSatisfies(e -> assertThat(((KVTransferException) e).reason())
				.contains("asked for aux row 5 of room 3, but the engine gave the room no aux row"))
				.verify(T);
		StepVerifier.create(r.completion()).expectError(KVTransferException.class).verify(T);
	}

	@Test
	void aPeerThatSendsFewerPagesAndReportsThemAllFailsOnDecodesOwnLedger() {
		// Pages 10 and 11 of 4, every buffer, and a Success whose count matches what was sent.
		startRogue((c, req) -> {
			for (int p = 0; p < 2; p++) {
				writePage(c, req, p, p);
			}
			c.send(new KVMessage.Status(req.room(), KVPoll.SUCCESS, 0, "", 2L * buffers * itemLen,
					KVMessage.NO_CHECKSUM));
		});
		KVReceiver r = decode.receiver(ROGUE_BOOTSTRAP, 4);
		r.sendMetadata(new int[] { 10, 11, 12, 13 }, -1, new int[0]);
		StepVerifier.create(r.completion()).expectErrorSatisfies(e -> {
			KVTransferException k = (KVTransferException) e;
			assertThat(k.failureCause()).isEqualTo(FailureCause.INCOMPLETE);
			assertThat(k.reason()).contains("KV buffer 0: 512 of 1024 bytes landed; 2 of 4 granted items short: "
					+ "12 (0 of 256 bytes), 13 (0 of 256 bytes)");
		}).verify(T);
		StepVerifier.create(r.layers()).as("no layer holds all its bytes").expectComplete().verify(T);
	}

	@Test
	void aPeerThatNeverSendsTheAuxRowFailsOnDecodesOwnLedger() {
		startRogue((c, req) -> {
			writePage(c, req, 0, 0);
			c.send(new KVMessage.Status(req.room(), KVPoll.SUCCESS, 0, "", (long) buffers * itemLen,
					KVMessage.NO_CHECKSUM));
		});
		KVReceiver r = decode.receiver(ROGUE_BOOTSTRAP, 5);
		r.sendMetadata(new int[] { 10 }, 5, new int[0]);
		StepVerifier.create(r.completion()).expectErrorSatisfies(e -> {
			KVTransferException k = (KVTransferException) e;
			assertThat(k.failureCause()).isEqualTo(FailureCause.INCOMPLETE);
			assertThat(k.reason()).contains("AUX buffer 0: 0 of 64 bytes landed; 1 of 1 granted items short: 5");
		}).verify(T);
	}

	@Test
	void onePageTwiceAndAnotherNeverIsRefusedAtTheSecondWrite() {
		// Page 20 twice and page 21 never: the byte counts the Success reports match what was sent.
		startRogue((c, req) -> {
			writePage(c, req, 0, 0);
			writePage(c, req, 0, 0);
			c.send(new KVMessage.Status(req.room(), KVPoll.SUCCESS, 0, "", 2L * buffers * itemLen,
					KVMessage.NO_CHECKSUM));
		});
		KVReceiver r = decode.receiver(ROGUE_BOOTSTRAP, 6);
		r.sendMetadata(new int[] { 20, 21 }, -1, new int[0]);
		StepVerifier.create(r.completion()).expectErrorSatisfies(e -> {
			KVTransferException k = (KVTransferException) e;
			assertThat(k.failureCause()).isEqualTo(FailureCause.PROTOCOL);
			assertThat(k.reason()).contains("more than its ledger allows: KV item 20 of region 0: bytes [0, 256) "
					+ "written twice");
		}).verify(T);
		StepVerifier.create(r.layers()).expectComplete().verify(T);
	}

	@Test
	void anOverlappingPartialWriteIsRefused() {
		// Half of page 20, then a write that starts inside that half: one byte range twice.
		startRogue((c, req) -> {
			c.send(block(req.room(), 0, 20L * itemLen, itemLen / 2));
			c.send(block(req.room(), 0, 20L * itemLen + itemLen / 2 - 8, itemLen / 2));
		});
		KVReceiver r = decode.receiver(ROGUE_BOOTSTRAP, 7);
		r.sendMetadata(new int[] { 20 }, -1, new int[0]);
		StepVerifier.create(r.completion()).expectErrorSatisfies(e -> assertThat(((KVTransferException) e).reason())
				.contains("KV item 20 of region 0: bytes [120, 128) written twice")).verify(T);
	}

	@Test
	void everyGrantedByteExactlyOnceSucceedsAndEmitsEveryLayer() {
		startRogue((c, req) -> {
			// Each page in two halves, the second halves first.
			for (int p = 0; p < req.dstPages().length; p++) {
				for (int b = 0; b < buffers; b++) {
					long at = (long) req.dstPages()[p] * itemLen;
					c.send(block(req.room(), b, at + itemLen / 2, itemLen / 2));
					c.send(block(req.room(), b, at, itemLen / 2));
				}
			}
			c.send(new DataBlock(new DataHeader(req.room(), RegionKind.AUX, 0, 5L * 64, 64, 0, 1),
					prefillMem.kvArgs().auxRegions().get(0).address(), 0));
			c.send(new KVMessage.Status(req.room(), KVPoll.SUCCESS, 0, "", 2L * buffers * itemLen + 64,
					KVMessage.NO_CHECKSUM));
		});
		KVReceiver r = decode.receiver(ROGUE_BOOTSTRAP, 8);
		r.sendMetadata(new int[] { 30, 31 }, 5, new int[0]);
		StepVerifier.create(r.completion()).verifyComplete();
		StepVerifier.create(r.layers().collectList()).assertNext(l -> assertThat(l).containsExactlyInAnyOrder(0, 1))
				.verifyComplete();
	}

	@Test
	void aPageListedTwiceIsRefusedAtOnce() {
		start();
		KVReceiver r = decode.receiver(BOOTSTRAP, 9);
		assertThatThrownBy(() -> r.sendMetadata(new int[] { 3, 4, 3 }, -1,
				new int[0])).isInstanceOf(IllegalArgumentException.class).hasMessage("page index 3 listed twice "
						+ "(expected: distinct)");
	}

	private void writePage(KVConnection c, KVMessage.TransferRequest req, int srcPage, int dstPosition) {
		for (int b = 0; b < buffers; b++) {
			c.send(new DataBlock(new DataHeader(req.room(), RegionKind.KV, b,
					(long) req.dstPages()[dstPosition] * itemLen, itemLen, 0, 1),
					prefillMem.kvArgs().kvRegions().get(b).itemAddress(srcPage), 0));
		}
	}

	private DataBlock block(long room, int buffer, long dstOffset, int length) {
		return new DataBlock(new DataHeader(room, RegionKind.KV, buffer, dstOffset, length, 0, 1),
				prefillMem.kvArgs().kvRegions().get(buffer).address(), 0);
	}

	/** A prefill rank that answers the handshake, then does what {@code onRequest} says over one connection. */
	private void startRogue(BiConsumer<KVConnection, KVMessage.TransferRequest> onRequest) {
		decode = KVManagerSpec.decode().kvArgs(decodeMem.kvArgs()).transport(transport).bootstrapClient(bootstrap)
				.stripes(1).startNow();
		rogue = RoguePrefill.start(transport, bootstrap, ROGUE_BOOTSTRAP, prefillMem.kvArgs(), onRequest);
	}
}
