package io.kvferry.examples.snippets;

import java.util.ArrayList;
import java.util.List;

import io.kvferry.KVArgs;
import io.kvferry.MemoryRegion;
import io.netty.buffer.ByteBuf;

/**
 * The KV cache of one rank in the examples, laid out as SGLang lays out its pools: per layer one region whose item is
 * one page of that layer ({@value #PAGE_SIZE} tokens of {@value #PAGE_BYTES} bytes), and one aux region with a row
 * per request in flight. A page index means the same page in every layer region.
 */
final class Cache {

	static final int LAYERS = 2;
	static final int PAGES = 32;
	static final int PAGE_SIZE = 16;
	static final int PAGE_BYTES = 512;
	static final int AUX_ROWS = 4;
	static final int AUX_BYTES = 64;

	private Cache() {
	}

	/** @return a new rank's registered memory: {@value #LAYERS} layer regions and one aux region */
	static KVArgs args() {
		// tag::kv-args[]
		// One region per layer; item i of every layer's region is page i. An engine describes its own pool with
		// MemoryRegion.of(address, length, itemLen) instead of allocating.
		List<MemoryRegion> layers = new ArrayList<>();
		for (int l = 0; l < LAYERS; l++) {
			layers.add(MemoryRegion.allocate(PAGES, PAGE_BYTES));
		}
		return KVArgs.builder()
				.kvRegions(layers)                         // K and V pools: every layer's K, then every V
				.auxRegions(List.of(MemoryRegion.allocate(AUX_ROWS, AUX_BYTES)))   // a row per request
				.pageSize(PAGE_SIZE)                       // tokens per page
				.build();
		// end::kv-args[]
	}

	/** Writes what prefill "computed" into {@code pages} of every layer and into the aux row: bytes from {@code seed}. */
	static void fill(KVArgs args, int[] pages, int auxRow, int seed) {
		for (MemoryRegion layer : args.kvRegions()) {
			for (int i = 0; i < pages.length; i++) {
				fillItem(layer, pages[i], seed + i);
			}
			seed += pages.length;
		}
		fillItem(args.auxRegions().get(0), auxRow, seed);
	}

	/**
	 * @return whether decode's pages and aux row hold, byte for byte, what prefill's pages and aux row held; pages
	 *         correspond by position in the two lists
	 */
	static boolean same(KVArgs prefill, int[] prefillPages, int prefillAux, KVArgs decode, int[] decodePages,
			int decodeAux) {
		for (int l = 0; l < prefill.kvRegions().size(); l++) {
			for (int i = 0; i < prefillPages.length; i++) {
				if (!sameItem(prefill.kvRegions().get(l), prefillPages[i], decode.kvRegions().get(l),
						decodePages[i])) {
					return false;
				}
			}
		}
		return sameItem(prefill.auxRegions().get(0), prefillAux, decode.auxRegions().get(0), decodeAux);
	}

	/** @return the bytes a room of {@code pages} pages moves: every layer's pages and one aux row */
	static long roomBytes(int pages) {
		return (long) LAYERS * pages * PAGE_BYTES + AUX_BYTES;
	}

	private static void fillItem(MemoryRegion region, int item, int seed) {
		ByteBuf view = region.wrap((long) item * region.itemLen(), region.itemLen());
		try {
			for (int i = 0; i < region.itemLen(); i++) {
				view.setByte(i, seed * 31 + i);
			}
		}
		finally {
			view.release();
		}
	}

	private static boolean sameItem(MemoryRegion src, int srcItem, MemoryRegion dst, int dstItem) {
		ByteBuf a = src.wrap((long) srcItem * src.itemLen(), src.itemLen());
		ByteBuf b = dst.wrap((long) dstItem * dst.itemLen(), dst.itemLen());
		try {
			return a.equals(b);
		}
		finally {
			a.release();
			b.release();
		}
	}
}
