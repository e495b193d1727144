package io.kvferry;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;

import org.junit.jupiter.api.Test;

/**
 * A fused KV cache (one buffer per layer, every page's K then every page's V) is split into the K and V regions the
 * rest of kvferry reads, in SGLang's order; buffers that are not two halves of whole pages, MLA, and K and V
 * interleaved within each page are refused by name.
 */
class FusedKvRegionsTest {

	private static final int ITEM = 256;
	private static final int PAGES = 6;

	@Test
	void splitsEachLayerIntoItsKHalfThenItsVHalf() {
		List<MemoryRegion> layers = List.of(fused(), fused(), fused());
		KVArgs args = KVArgs.builder().pageSize(16).fusedKvRegions(layers, FusedKVLayout.K_THEN_V).build();

		assertThat(args.kvRegions()).hasSize(6);
		assertThat(args.kvLayerCount()).isEqualTo(3);
		for (int l = 0; l < 3; l++) {
			MemoryRegion layer = layers.get(l);
			MemoryRegion k = args.kvRegions().get(l);
			MemoryRegion v = args.kvRegions().get(3 + l);
			assertThat(k).isEqualTo(MemoryRegion.of(layer.address(), PAGES * ITEM, ITEM));
			assertThat(v).isEqualTo(MemoryRegion.of(layer.address() + PAGES * ITEM, PAGES * ITEM, ITEM));
		}
	}

	@Test
	void draftLayersFollowTheMainLayersKThenV() {
		List<MemoryRegion> layers = List.of(fused(), fused(), fused());
		KVArgs args = KVArgs.builder().pageSize(16).draftLayers(1).fusedKvRegions(layers, FusedKVLayout.K_THEN_V)
				.build();

		long half = PAGES * ITEM;
		assertThat(args.kvRegions()).extracting(MemoryRegion::address).containsExactly(layers.get(0).address(),
				layers.get(1).address(), layers.get(0).address() + half, layers.get(1).address() + half,
				layers.get(2).address(), layers.get(2).address() + half);
		assertThat(args.kvLayerCount()).isEqualTo(2);
		assertThat(args.draftLayers()).isEqualTo(1);
	}

	@Test
	void theSplitKeepsAllocatedMemoryAndRebuildsFromItsRegions() {
		KVArgs args = KVArgs.builder().pageSize(16).fusedKvRegions(List.of(fused()), FusedKVLayout.K_THEN_V).build();

		assertThat(args.mutate().build().kvRegions()).isEqualTo(args.kvRegions());
		assertThat(KVArgs.builder().fusedKvRegions(List.of(fused()), FusedKVLayout.K_THEN_V)
				.kvRegions(args.kvRegions()).pageSize(16).build().kvRegions())
				.as("the last declaration wins").isEqualTo(args.kvRegions());
	}

	@Test
	void refusesHalvesThatAreNotWholePages() {
		MemoryRegion odd = MemoryRegion.allocate(5, ITEM);
		assertThatThrownBy(() -> KVArgs.builder().pageSize(16)
				.fusedKvRegions(List.of(fused(), odd), FusedKVLayout.K_THEN_V).build())
				.isInstanceOf(IllegalArgumentException.class)
				.hasMessage("fusedKvRegions[1] : length 1280 with itemLen 256 (expected: K then V in two equal halves "
						+ "of whole pages, a multiple of 512 bytes)");
		MemoryRegion oddBytes = MemoryRegion.of(fused().address(), 2L * PAGES * ITEM - 1, ITEM);
		assertThatThrownBy(() -> KVArgs.builder().pageSize(16)
				.fusedKvRegions(List.of(oddBytes), FusedKVLayout.K_THEN_V).build())
				.isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("fusedKvRegions[0] : length 3071");
	}

	@Test
	void refusesMla() {
		assertThatThrownBy(() -> KVArgs.builder().mla(true).fusedKvRegions(List.of(fused()), FusedKVLayout.K_THEN_V)
				.build())
				.isInstanceOf(IllegalArgumentException.class)
				.hasMessageStartingWith("fusedKvRegions : 1 buffers with mla");
	}

	@Test
	void refusesKAndVInterleavedWithinEachPageByName() {
		assertThatThrownBy(() -> KVArgs.builder().fusedKvRegions(List.of(fused()),
				FusedKVLayout.INTERLEAVED_PER_PAGE))
				.isInstanceOf(TopologyException.class)
				.hasMessage("fused KV layout INTERLEAVED_PER_PAGE ([num_blocks, 2, block, heads, dim], K and V side by "
						+ "side in each page) is not supported: a KV region's pages must follow one another, and "
						+ "kvferry has no item stride to step over each page's V; allocate each layer as K_THEN_V "
						+ "halves ([2, num_blocks, block, heads, dim]) or as separate K and V buffers (kvRegions)");
	}

	/** @return one layer's buffer: {@value #PAGES} pages of K, then {@value #PAGES} pages of V */
	private static MemoryRegion fused() {
		return MemoryRegion.allocate(2 * PAGES, ITEM);
	}
}
