package io.kvferry.examples.engine;

import java.nio.ByteOrder;
import java.util.List;

import io.kvferry.KVArgs;
import io.kvferry.MemoryRegion;
import io.kvferry.spi.NativeMemory;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The pool is laid out as SGLang's, and its KVArgs say so. */
class PagedKVCacheTest {

	private static final TinyConfig TINY = TinyConfig.tiny();

	@Test
	void kvArgsListKBuffersThenVBuffersOfOnePagePerItem() {
		PagedKVCache cache = PagedKVCache.allocate(TINY, 2, 4, 10, 3, 1);
		List<KVArgs> args = cache.kvArgs();
		assertThat(args).hasSize(2);
		for (int r = 0; r < 2; r++) {
			KVArgs a = args.get(r);
			assertThat(a.engineRank()).isEqualTo(r);
			assertThat(a.kvRegions()).hasSize(2 * TINY.layers());
			assertThat(a.kvLayerCount()).isEqualTo(TINY.layers());
			// 4 tokens x 2 heads of this rank x 16 floats x 4 bytes.
			assertThat(a.kvRegions()).allSatisfy(region -> {
				assertThat(region.itemLen()).isEqualTo(512);
				assertThat(region.itemCount()).isEqualTo(10);
			});
			assertThat(a.pageSize()).isEqualTo(4);
			assertThat(a.kvHeadNum()).isEqualTo(2);
			assertThat(a.totalKvHeadNum()).isEqualTo(4);
			assertThat(a.dtype()).isEqualTo("fp32");
			assertThat(a.isMla()).isFalse();
			assertThat(a.auxRegions()).singleElement().satisfies(aux -> {
				assertThat(aux.itemLen()).isEqualTo(RankKVCache.AUX_ROW_BYTES);
				assertThat(aux.itemCount()).isEqualTo(3);
			});
		}
	}

	@Test
	void eachRankStoresItsHeadsAtPageSlotHeadDim() {
		PagedKVCache cache = PagedKVCache.allocate(TINY, 2, 4, 10, 1, 1);
		PageTable table = new PageTable();
		cache.reserve(table, 7);
		float[] k = new float[TINY.kvHeads() * TINY.headDim()];
		float[] v = new float[k.length];
		for (int i = 0; i < k.length; i++) {
			k[i] = 1000 + i;
			v[i] = -1000 - i;
		}
		int layer = 1;
		cache.write(layer, table, 6, k, v);
		int page = table.page(1);
		for (int r = 0; r < 2; r++) {
			KVArgs a = cache.kvArgs().get(r);
			MemoryRegion kRegion = a.kvRegions().get(layer);
			MemoryRegion vRegion = a.kvRegions().get(TINY.layers() + layer);
			for (int h = 0; h < 2; h++) {
				int modelHead = r * 2 + h;
				for (int dim = 0; dim < TINY.headDim(); dim++) {
					// [page][slot 2 of 4][head h of 2][dim of 16], fp32 little-endian
					long offset = (long) page * kRegion.itemLen() + ((2L * 2 + h) * TINY.headDim() + dim) * 4;
					assertThat(floatAt(kRegion, offset)).isEqualTo(1000f + modelHead * TINY.headDim() + dim);
					assertThat(floatAt(vRegion, offset)).isEqualTo(-1000f - modelHead * TINY.headDim() - dim);
				}
			}
		}
	}

	private static float floatAt(MemoryRegion region, long offset) {
		return NativeMemory.byteBuffer(region.address() + offset, 4).order(ByteOrder.LITTLE_ENDIAN).getFloat(0);
	}

	@Test
	void pagesAreScatteredDistinctAndComeBack() {
		PagedKVCache cache = PagedKVCache.allocate(TINY, 1, 4, 32, 1, 5);
		PageTable table = new PageTable();
		cache.reserve(table, 4 * 8);
		int[] pages = table.pages();
		assertThat(pages).hasSize(8).doesNotHaveDuplicates();
		assertThat(pages).isNotEqualTo(new int[] { pages[0], pages[0] + 1, pages[0] + 2, pages[0] + 3, pages[0] + 4,
				pages[0] + 5, pages[0] + 6, pages[0] + 7 });
		assertThat(cache.freePages()).isEqualTo(24);
		cache.release(table);
		assertThat(table.size()).isZero();
		assertThat(cache.freePages()).isEqualTo(32);
	}

	@Test
	void runningOutOfPagesSaysHowManyWereMissing() {
		PagedKVCache cache = PagedKVCache.allocate(TINY, 1, 4, 2, 1, 5);
		PageTable table = new PageTable();
		assertThatThrownBy(() -> cache.reserve(table, 9)).hasMessage("pages : 0 free (expected: 1 more for 9 tokens)");
	}

	@Test
	void auxRowsCarryTheFirstTokenAndTheRoomAndAreClearedWhenReused() {
		PagedKVCache cache = PagedKVCache.allocate(TINY, 2, 4, 2, 1, 5);
		int row = cache.allocateAuxRow();
		cache.ranks().forEach(r -> r.writeAux(row, 77, 0x1234_5678_9AL));
		assertThat(cache.ranks()).allSatisfy(r -> {
			assertThat(r.auxToken(row)).isEqualTo(77);
			assertThat(r.auxRoom(row)).isEqualTo(0x1234_5678_9AL);
		});
		assertThatThrownBy(cache::allocateAuxRow).hasMessage("aux rows : 0 free (expected: one per request in flight)");
		cache.releaseAuxRow(row);
		assertThat(cache.allocateAuxRow()).isEqualTo(row);
		assertThat(cache.ranks()).allSatisfy(r -> assertThat(r.auxRoom(row)).isZero());
	}
}
