package io.kvferry.examples.engine;

import java.nio.FloatBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;

import io.kvferry.KVArgs;

/**
 * The KV cache of one instance (prefill or decode): one {@link RankKVCache} per attention TP rank, one page allocator
 * and one aux-row allocator shared by the ranks, as an engine's scheduler hands the same page indices to every rank.
 *
 * <p>Free pages are handed out in a scrambled order so that a request's pages are not adjacent and the two sides of a
 * transfer use different page indices: only the page tables say where a token lives. Allocation is thread-safe (pages
 * come back when a transfer ends, on a transport thread); reads and writes of the KV data are the caller's to order.
 */
public final class PagedKVCache {

	private final TinyConfig config;
	private final HeadLayout heads;
	private final int pageSize;
	private final List<RankKVCache> ranks;
	private final ArrayDeque<Integer> freePages = new ArrayDeque<>();
	private final ArrayDeque<Integer> freeRows = new ArrayDeque<>();

	private PagedKVCache(TinyConfig config, int tpSize, int pageSize, int pages, int auxRows, long scatterSeed) {
		if (pageSize < 1 || pages < 1 || auxRows < 1) {
			throw new IllegalArgumentException("pool : page size " + pageSize + ", " + pages + " pages, " + auxRows
					+ " aux rows (expected: all >= 1)");
		}
		this.config = config;
		this.heads = new HeadLayout(config.kvHeads(), config.queryHeads(), tpSize);
		this.pageSize = pageSize;
		List<RankKVCache> r = new ArrayList<>();
		for (int rank = 0; rank < tpSize; rank++) {
			RankKVCache cache = new RankKVCache(config, heads, rank, pageSize, pages, auxRows);
			cache.poison();
			r.add(cache);
		}
		this.ranks = List.copyOf(r);
		List<Integer> order = new ArrayList<>();
		for (int p = 0; p < pages; p++) {
			order.add(p);
		}
		Collections.shuffle(order, new Random(scatterSeed));
		freePages.addAll(order);
		for (int row = 0; row < auxRows; row++) {
			freeRows.add(row);
		}
	}

	/**
	 * Allocates an instance's cache in native memory; K and V start as NaN.
	 *
	 * @param config the model
	 * @param tpSize attention TP size (one rank cache each)
	 * @param pageSize tokens per page
	 * @param pages pages per layer buffer
	 * @param auxRows aux rows per rank
	 * @param scatterSeed the order free pages are handed out in
	 * @return the cache
	 */
	public static PagedKVCache allocate(TinyConfig config, int tpSize, int pageSize, int pages, int auxRows,
			long scatterSeed) {
		return new PagedKVCache(config, tpSize, pageSize, pages, auxRows, scatterSeed);
	}

	public TinyConfig config() {
		return config;
	}

	public HeadLayout heads() {
		return heads;
	}

	public int pageSize() {
		return pageSize;
	}

	/** @return the rank caches, by attention TP rank */
	public List<RankKVCache> ranks() {
		return ranks;
	}

	/** @return what each rank registers with kvferry, by attention TP rank */
	public List<KVArgs> kvArgs() {
		return ranks.stream().map(RankKVCache::kvArgs).toList();
	}

	/**
	 * Grows {@code table} until it holds {@code tokens} tokens.
	 *
	 * @throws IllegalStateException when the pool is out of pages (the pages taken so far stay in the table)
	 */
	public synchronized void reserve(PageTable table, int tokens) {
		int needed = (tokens + pageSize - 1) / pageSize;
		while (table.size() < needed) {
			Integer page = freePages.poll();
			if (page == null) {
				throw new IllegalStateException("pages : 0 free (expected: " + (needed - table.size())
						+ " more for " + tokens + " tokens)");
			}
			table.add(page);
		}
	}

	/** Returns a table's pages to the pool and empties the table. */
	public synchronized void release(PageTable table) {
		for (int i = 0; i < table.size(); i++) {
			freePages.add(table.page(i));
		}
		table.clear();
	}

	/** @return pages free now */
	public synchronized int freePages() {
		return freePages.size();
	}

	/**
	 * @return a free aux row, cleared on every rank
	 * @throws IllegalStateException when none is free
	 */
	public synchronized int allocateAuxRow() {
		Integer row = freeRows.poll();
		if (row == null) {
			throw new IllegalStateException("aux rows : 0 free (expected: one per request in flight)");
		}
		ranks.forEach(r -> r.clearAux(row));
		return row;
	}

	public synchronized void releaseAuxRow(int row) {
		freeRows.add(row);
	}

	/**
	 * Stores one token's K and V of one layer: each rank takes the heads it holds, at the slot the page table gives.
	 *
	 * @param k the token's K for every model KV head, {@code [kvHeads][headDim]} (after rotary positions)
	 * @param v the token's V, same shape
	 */
	public void write(int layer, PageTable table, int position, float[] k, float[] v) {
		int page = table.page(position / pageSize);
		int slot = position % pageSize;
		int headDim = config.headDim();
		for (RankKVCache rank : ranks) {
			FloatBuffer kb = rank.k(layer);
			FloatBuffer vb = rank.v(layer);
			for (int h = 0; h < rank.heads(); h++) {
				int from = heads.modelKvHead(rank.rank(), h) * headDim;
				int to = rank.index(page, slot, h);
				kb.put(to, k, from, headDim);
				vb.put(to, v, from, headDim);
			}
		}
	}

	/** @return the rank that computes query head {@code queryHead}, holding its KV head */
	public RankKVCache rankForQueryHead(int queryHead) {
		return ranks.get(heads.rankOfQueryHead(queryHead));
	}
}
