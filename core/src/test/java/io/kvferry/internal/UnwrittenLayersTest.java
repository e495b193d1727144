package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;

import io.kvferry.DecodeKVManager;
import io.kvferry.FailureCause;
import io.kvferry.HostPort;
import io.kvferry.KVArgs;
import io.kvferry.KVManager;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.KVTransferException;
import io.kvferry.LandedPages;
import io.kvferry.ParallelLayout;
import io.kvferry.PrefillKVManager;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.RegionKind;
import io.kvferry.test.InMemoryBootstrap;
import io.kvferry.test.RoguePrefill;
import io.kvferry.transport.local.InMemoryKVTransport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;

/**
 * A prefill pool of 1 layer against a decode pool of 4 layers with the same heads, head size, dtype and page size:
 * every byte decode registered for a room must be written before Success, so such a pair is refused before any byte
 * moves, whether prefill is this library (it refuses at the handshake) or a peer that announces 1 layer and writes it
 * faithfully. Never a Success with layers 1..3 all zeros. Both sides declare the model's 4 layers here, so that the
 * handshake's model fingerprint agrees and the pairing and the room's plan are what refuse: a prefill rank given the
 * wrong share of a model (a stage's layers while it runs without pipeline stages) passes the fingerprint.
 */
class UnwrittenLayersTest {

	private static final Duration T = Duration.ofSeconds(10);
	private static final ModelShape ONE_LAYER = new ModelShape(1, 2, 16, 2, 4, false, 0, 64, 0);
	private static final ModelShape FOUR_LAYERS = new ModelShape(4, 2, 16, 2, 4, false, 0, 64, 0);
	private static final HostPort BOOTSTRAP = new HostPort("127.0.0.1", 8998);
	private static final HostPort ROGUE_BOOTSTRAP = new HostPort("10.0.0.1", 1);

	private final InMemoryBootstrap bootstrap = new InMemoryBootstrap();
	private final InMemoryKVTransport transport = InMemoryKVTransport.create();
	private final RankMemory prefillMem = RankMemory.prefill(ONE_LAYER, ParallelLayout.SINGLE, 16, 4, 0);
	private final RankMemory decodeMem = RankMemory.decode(FOUR_LAYERS, ParallelLayout.SINGLE, 16, 4, 0);
	private PrefillKVManager prefill;
	private DecodeKVManager decode;
	private RoguePrefill rogue;

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

	/** @return the rank's memory, declaring the model's 4 layers */
	private static KVArgs declared(RankMemory mem) {
		return mem.kvArgs().mutate().modelLayers(4).build();
	}

	@Test
	void aPrefillPoolWithFewerLayersIsRefusedBeforeAnyByteMoves() {
		prefill = KVManagerSpec.prefill().kvArgs(declared(prefillMem)).transport(transport).bootstrapClient(bootstrap)
				.bootstrapAddress(BOOTSTRAP).bindAddress(new HostPort("127.0.0.1", 0)).startNow();
		decode = KVManagerSpec.decode().kvArgs(declared(decodeMem)).transport(transport).bootstrapClient(bootstrap)
				.stripes(1).startNow();
		int[] dst = { 3, 4 };
		KVReceiver r = decode.receiver(BOOTSTRAP, 1);
		r.sendMetadata(dst, 1, new int[0]);
		prefillMem.fill(1, new int[] { 0, 1 }, 1, new int[0]);
		KVSender s = prefill.sender(1);
		s.init(2, 1);
		s.send(new int[] { 0, 1 }, new int[0]);
		StepVerifier.create(r.completion()).expectErrorSatisfies(e -> {
			KVTransferException k = (KVTransferException) e;
			assertThat(k.failureCause()).isEqualTo(FailureCause.INCOMPATIBLE);
			assertThat(k.reason()).contains("prefill holds layers 0..0 (1 layers), decode 0..3 (4 layers)");
		}).verify(T);
		StepVerifier.create(r.layers()).expectComplete().verify(T);
		assertThat(decodeMem.isZero(dst)).as("no byte of the room moved").isTrue();
	}

	@Test
	void aPeerAnnouncingOneLayerAndWritingItFaithfullyNeverSucceeds() {
		int itemLen = prefillMem.kvArgs().kvRegions().get(0).itemLen();
		decode = KVManagerSpec.decode().kvArgs(declared(decodeMem)).transport(transport).bootstrapClient(bootstrap)
				.stripes(1).startNow();
		rogue = RoguePrefill.start(transport, bootstrap, ROGUE_BOOTSTRAP, declared(prefillMem), (c, req) -> {
			// K0 and V0 of every page asked for, where pairing by layer puts them in decode's list (its buffers 0
			// and 4), then a Success that counts them: all a 1-layer pool holds.
			long sent = 0;
			for (int b = 0; b < 2; b++) {
				for (int i = 0; i < req.dstPages().length; i++) {
					c.send(new DataBlock(new DataHeader(req.room(), RegionKind.KV, 4 * b,
							(long) req.dstPages()[i] * itemLen, itemLen, 0, 1),
							prefillMem.kvArgs().kvRegions().get(b).itemAddress(i), 0));
					sent += itemLen;
				}
			}
			c.send(new KVMessage.Status(req.room(), KVPoll.SUCCESS, 0, "", sent, KVMessage.NO_CHECKSUM));
		});
		KVReceiver r = decode.receiver(ROGUE_BOOTSTRAP, 2);
		r.sendMetadata(new int[] { 5, 6 }, -1, new int[0]);
		StepVerifier.create(r.completion()).expectErrorSatisfies(e -> {
			KVTransferException k = (KVTransferException) e;
			assertThat(k.failureCause()).isEqualTo(FailureCause.INCOMPATIBLE);
			// Refused at decode's handshake, or else by the room's plan: either names both sides' layers.
			assertThat(k.reason()).contains("0..0 (1 layers)").contains("0..3 (4 layers)");
			assertThat(k.landedPages().landed()).as("no page landed in every layer").isEmpty();
		}).verify(T);
		StepVerifier.create(r.layers()).as("layer 0 alone is not the room").expectComplete().verify(T);
	}

	@Test
	void aDecodeOnlyDraftLayerIsNotALayerOfTheRoomsLandedPages() {
		// Decode: 2 main layers and a draft model's layer that no prefill rank writes; prefill: the 2 main layers.
		ModelShape withDraft = new ModelShape(2, 2, 16, 2, 4, false, 1, 64, 0);
		RankMemory src = RankMemory.prefill(withDraft, ParallelLayout.SINGLE, 16, 4, 0);
		RankMemory dstMem = RankMemory.decode(withDraft, ParallelLayout.SINGLE, 16, 4, 0);
		prefill = KVManagerSpec.prefill().kvArgs(src.kvArgs()).transport(transport).bootstrapClient(bootstrap)
				.bootstrapAddress(BOOTSTRAP).bindAddress(new HostPort("127.0.0.1", 0)).startNow();
		decode = KVManagerSpec.decode().kvArgs(dstMem.kvArgs()).transport(transport).bootstrapClient(bootstrap)
				.stripes(1).startNow();
		KVReceiver r = decode.receiver(BOOTSTRAP, 3);
		r.sendMetadata(new int[] { 3, 4, 5, 6 }, -1, new int[0]);
		src.fill(3, new int[] { 0, 1, 2, 3 }, -1, new int[0]);
		KVSender s = prefill.sender(3);
		s.init(4, -1);
		s.send(new int[] { 0, 1 }, new int[0]);
		// Both pages of the first chunk in all 4 main buffers, then prefill gives up.
		long firstChunk = 2L * 4 * src.kvArgs().kvRegions().get(0).itemLen();
		StepVerifier.create(Flux.interval(Duration.ofMillis(1))
				.filter(t -> decode.stats().bytesReceived() >= firstChunk).next()).expectNextCount(1).verifyComplete();
		s.abort("prefill gives up");
		StepVerifier.create(r.completion()).expectErrorSatisfies(e -> {
			LandedPages landed = ((KVTransferException) e).landedPages();
			assertThat(landed.layers()).as("the room fills the 2 main layers only").isEqualTo(2);
			assertThat(landed.landed()).containsExactly(3, 4);
			assertThat(landed.missing()).containsExactly(5, 6);
		}).verify(T);
	}
}
