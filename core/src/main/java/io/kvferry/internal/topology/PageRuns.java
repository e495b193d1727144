package io.kvferry.internal.topology;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Splits paired source and destination page lists into maximal runs where both advance by one (SGLang's page
 * grouping), so that each run moves as one block per layer buffer. Stateless and thread-safe.
 *
 * <pre>{@code
 * PageRuns.group(new int[] {4, 5, 6, 9}, new int[] {0, 1, 2, 3})
 * // [PageRun[srcStart=4, dstStart=0, length=3], PageRun[srcStart=9, dstStart=3, length=1]]
 * }</pre>
 */
public final class PageRuns {

	private PageRuns() {
	}

	/**
	 * @param srcPages source (prefill) page indices, in transfer order; not modified
	 * @param dstPages destination (decode) page indices, one per source page; not modified
	 * @return the runs in order; empty when both lists are empty
	 * @throws IllegalArgumentException when the lengths differ (the message gives both) or an index is negative
	 */
	public static List<PageRun> group(int[] srcPages, int[] dstPages) {
		Objects.requireNonNull(srcPages, "srcPages");
		Objects.requireNonNull(dstPages, "dstPages");
		if (srcPages.length != dstPages.length) {
			throw new IllegalArgumentException("page lists : " + srcPages.length + " source pages, " + dstPages.length
					+ " destination pages (expected: the same length)");
		}
		List<PageRun> runs = new ArrayList<>();
		int n = srcPages.length;
		int i = 0;
		while (i < n) {
			int src = checkPage("srcPages", i, srcPages[i]);
			int dst = checkPage("dstPages", i, dstPages[i]);
			int j = i + 1;
			// Long arithmetic: Integer.MAX_VALUE + 1 must not wrap to a (negative) value that extends the run.
			while (j < n && srcPages[j] == (long) src + (j - i) && dstPages[j] == (long) dst + (j - i)) {
				j++;
			}
			runs.add(new PageRun(src, dst, j - i));
			i = j;
		}
		return runs;
	}

	private static int checkPage(String name, int index, int page) {
		if (page < 0) {
			throw new IllegalArgumentException(name + "[" + index + "] : " + page + " (expected: >= 0)");
		}
		return page;
	}
}
