package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

import io.kvferry.KVArgs;
import io.kvferry.MemoryRegion;
import io.kvferry.ParallelLayout;
import io.kvferry.spi.PeerLayout;
import io.kvferry.spi.RegionKind;
import io.kvferry.spi.RegionLayout;
import org.junit.jupiter.api.Test;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;

class LayerLandingTest {

	private static final Duration T = Duration.ofSeconds(10);

	// 3 main layers and 1 draft layer, MHA: K0 K1 K2 V0 V1 V2 Kd Vd.
	private final LayerRegions layers = LayerRegions.of(8, 1, false);
	private final AtomicBoolean live = new AtomicBoolean(true);
	private final LayerLanding landing = new LayerLanding(layers, live::get);

	@Test
	void layersOwnTheirKAndVBuffersMainThenDraft() {
		assertThat(layers.layers()).isEqualTo(4);
		assertThat(layers.regions(1)).containsExactly(1, 4);
		assertThat(layers.regions(3)).containsExactly(6, 7);
		for (int r = 0; r < 8; r++) {
			int layer = layers.layerOf(r);
			assertThat(layers.regions(layer)).contains(r);
		}
		LayerRegions mla = LayerRegions.of(5, 2, true);
		assertThat(mla.regions(4)).containsExactly(4);
		assertThat(mla.layerOf(3)).isEqualTo(3);
	}

	@Test
	void aLayerIsEmittedOnceOnlyWhenItsKAndVBuffersAreBothComplete() {
		// Draft layer unfilled: not a layer of the room. Items of 10 bytes, 3 pages.
		GrantLedger ledger = ledger(10, new int[] { 1, 2, 3 }, 1, 1, 1, 1, 1, 1, 0, 0);
		landing.expect(ledger);
		List<Integer> seen = new ArrayList<>();
		landing.flux(Schedulers.immediate()).subscribe(seen::add);
		land(ledger, 1, 30);
		land(ledger, 4, 29);
		assertThat(seen).as("layer 1 with its K buffer complete and one byte of V missing").isEmpty();
		land(ledger, 4, 1);
		assertThat(seen).containsExactly(1);
		for (int r : new int[] { 0, 3, 2, 5 }) {
			land(ledger, r, 15);
			land(ledger, r, 15);
		}
		assertThat(seen).containsExactly(1, 0, 2);
		landing.end(true);
		StepVerifier.create(landing.flux(Schedulers.immediate())).expectNext(1, 0, 2).expectComplete().verify(T);
	}

	@Test
	void afterAFailureNoMoreLayersAndTheStreamCompletes() {
		GrantLedger ledger = ledger(4, new int[] { 0 }, 1, 1, 1, 1, 1, 1, 1, 1);
		landing.expect(ledger);
		StepVerifier.create(landing.flux(Schedulers.immediate()))
				.then(() -> {
					land(ledger, 0, 4);
					land(ledger, 3, 4);
				})
				.expectNext(0)
				.then(() -> {
					live.set(false);
					land(ledger, 1, 4);
					land(ledger, 4, 4);
					landing.end(false);
				})
				.expectComplete()
				.verify(T);
	}

	@Test
	void aRoomOfNoPagesEmitsItsLayersAtSuccess() {
		landing.expect(ledger(4, new int[0], 1, 1, 1, 1, 1, 1, 1, 1));
		landing.end(true);
		// Hot and replayed: a late subscriber sees every layer, then the end.
		StepVerifier.create(landing.flux(Schedulers.immediate())).expectNext(0, 1, 2, 3).expectComplete().verify(T);
	}

	@Test
	void concurrentLandingsEmitEachLayerOnce() throws Exception {
		GrantLedger ledger = ledger(1000, new int[] { 0 }, 1, 1, 1, 1, 1, 1, 1, 1);
		landing.expect(ledger);
		List<Integer> seen = Collections.synchronizedList(new ArrayList<>());
		landing.flux(Schedulers.immediate()).subscribe(seen::add);
		List<Thread> threads = new ArrayList<>();
		for (int t = 0; t < 4; t++) {
			Thread thread = new Thread(() -> {
				for (int i = 0; i < 250; i++) {
					for (int r = 0; r < 8; r++) {
						land(ledger, r, 1);
					}
				}
			});
			threads.add(thread);
			thread.start();
		}
		for (Thread thread : threads) {
			thread.join(T.toMillis());
		}
		assertThat(seen).containsExactlyInAnyOrder(0, 1, 2, 3);
	}

	private void land(GrantLedger ledger, int region, long n) {
		if (ledger.landed(RegionKind.KV, region, n)) {
			landing.landed(region);
		}
	}

	/** A ledger over 8 KV buffers of {@code itemLen}-byte pages, each written {@code times[r]} times. */
	private static GrantLedger ledger(int itemLen, int[] pages, int... times) {
		List<MemoryRegion> kv = new ArrayList<>();
		for (int r = 0; r < 8; r++) {
			kv.add(MemoryRegion.of(1L << 20, 16L * itemLen, itemLen));
		}
		KVArgs args = KVArgs.builder().pageSize(1).kvRegions(kv).draftLayers(1).build();
		return GrantLedger.of(args, pages, -1, new int[0][], times, 0, new int[0]);
	}

	@Test
	void replicatedHeadsArriveFromEveryRankThatHoldsThem() {
		// 2 KV heads of 16 bytes, page size 4: prefill TP 4 holds one head per rank (each twice), decode TP 2 one per
		// rank; decode rank 0 gets head 0 from prefill ranks 0 and 1.
		PeerLayout decode = layout(2, 0, 64);
		long[] perPage = LayerLanding.bytesPerPage(decode, List.of(layout(4, 0, 64), layout(4, 1, 64)));
		assertThat(perPage).containsExactly(128, 128);
		// Prefill TP 1 (both heads, 32 bytes a token) into decode TP 2: this rank's head only.
		assertThat(LayerLanding.bytesPerPage(decode, List.of(layout(1, 0, 128)))).containsExactly(64, 64);
	}

	@Test
	void theLastAnswerServesOnlyTheSameLayouts() {
		PeerLayout decode = layout(2, 0, 64);
		List<PeerLayout> tp4 = List.of(layout(4, 0, 64), layout(4, 1, 64));
		List<PeerLayout> tp1 = List.of(layout(1, 0, 128));
		long[] first = LayerLanding.bytesPerPage(decode, tp4);
		assertThat(LayerLanding.bytesPerPage(decode, new ArrayList<>(tp4))).as("the same layouts, another list")
				.isSameAs(first);
		// Equal but distinct layouts, another source list, another decode layout: each computed afresh.
		assertThat(LayerLanding.bytesPerPage(decode, List.of(layout(4, 0, 64), layout(4, 1, 64)))).isNotSameAs(first)
				.containsExactly(128, 128);
		assertThat(LayerLanding.bytesPerPage(decode, tp1)).containsExactly(64, 64);
		assertThat(LayerLanding.bytesPerPage(decode, tp4)).containsExactly(128, 128);
		assertThat(LayerLanding.bytesPerPage(layout(1, 0, 128), tp1)).containsExactly(128, 128);
	}

	private static PeerLayout layout(int tp, int rank, int itemLen) {
		return new PeerLayout(rank, ParallelLayout.tp(tp, rank), 4, false, "bf16", Math.max(1, 2 / tp), 2, 0, 0,
				List.of(new RegionLayout(itemLen, 16), new RegionLayout(itemLen, 16)), List.of(), List.of());
	}
}
