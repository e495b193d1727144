package io.kvferry.harness;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import org.jspecify.annotations.Nullable;

/**
 * The page and row pools of one {@link KVCluster}: a page pool and a row pool per prefill DP group (every rank of a
 * group holds the same pages), one of each for decode, and how a room draws from them and gives back. Thread-safe, as
 * each {@link PageAllocator} is.
 */
final class ClusterPages {

	private final KVClusterBuilder config;
	private final List<PageAllocator> prefillPages = new ArrayList<>();
	private final List<PageAllocator> prefillRows = new ArrayList<>();
	private final PageAllocator decodePages;
	private final PageAllocator decodeRows;

	ClusterPages(KVClusterBuilder config) {
		this.config = config;
		this.decodePages = new PageAllocator(config.pagesOf(config.decodeShape()));
		this.decodeRows = new PageAllocator(config.rows);
		for (int g = 0; g < config.prefillDp; g++) {
			prefillPages.add(new PageAllocator(config.pagesOf(config.prefillShape())));
			prefillRows.add(new PageAllocator(config.rows));
		}
	}

	/** @return {@code n} pages of prefill DP group {@code g}, or null when fewer are free */
	int @Nullable [] prefillPages(int g, int n, Random random, boolean contiguous) {
		return allocate(prefillPages.get(g), n, random, contiguous);
	}

	/** @return {@code n} decode pages, or null when fewer are free */
	int @Nullable [] decodePages(int n, Random random, boolean contiguous) {
		return allocate(decodePages, n, random, contiguous);
	}

	/** @return one aux row (and state slot) of prefill DP group {@code g}, or null when none is free */
	int @Nullable [] prefillRow(int g, Random random) {
		return prefillRows.get(g).allocate(1, random, false);
	}

	/** @return one decode aux row (and state slot), or null when none is free */
	int @Nullable [] decodeRow(Random random) {
		return decodeRows.allocate(1, random, false);
	}

	/** @return pages free on decode */
	int freeDecodePages() {
		return decodePages.free();
	}

	/** Gives back what a room of DP group {@code g} holds; null for what it never got. */
	void release(int g, int @Nullable [] src, int @Nullable [] dst, int @Nullable [] srcRow, int @Nullable [] dstRow) {
		if (src != null) {
			prefillPages.get(g).release(src);
		}
		if (dst != null) {
			decodePages.release(dst);
		}
		if (srcRow != null) {
			prefillRows.get(g).release(srcRow);
		}
		if (dstRow != null) {
			decodeRows.release(dstRow);
		}
	}

	private int @Nullable [] allocate(PageAllocator pool, int n, Random random, boolean contiguous) {
		return config.scatterRuns > 0 ? pool.allocateRuns(n, random, config.scatterRuns)
				: pool.allocate(n, random, contiguous);
	}
}
