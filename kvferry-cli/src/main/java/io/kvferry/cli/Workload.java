package io.kvferry.cli;

import java.util.AbstractList;
import java.util.List;
import java.util.RandomAccess;

/**
 * A batch of requests with mixed prompt lengths, as a serving engine sees them: most prompts are short (hundreds of
 * tokens), a long tail reaches the maximum (tens of thousands). Lengths depend only on the seed; room ids are distinct
 * non-negative numbers from their own seed. Immutable.
 *
 * <p>Nothing is held per request: request {@code i} is computed from the seeds and {@code i} whenever it is asked for,
 * so that a batch of a million requests starts its first room as soon as one of sixteen does. The batch's figures
 * (token range, totals, the largest requests) come from one pass over the lengths, kept once made.
 */
final class Workload {

	/**
	 * One request.
	 *
	 * @param room the room id
	 * @param tokens prompt tokens
	 * @param pages pages of {@code pageSize} tokens it needs
	 */
	record Request(long room, int tokens, int pages) {
	}

	/** The batch's figures, from one pass over its lengths. */
	private record Figures(int minTokens, int maxTokens, long totalTokens, long totalPages, int[] requestsByPages) {
	}

	// Skews uniform draws toward short prompts: with 128..12288 the median is ~230 tokens, the mean ~1,000.
	private static final double SKEW = 3.0;
	private static final long GOLDEN = 0x9E3779B97F4A7C15L;

	private final int count;
	private final int minTokens;
	private final int maxTokens;
	private final int pageSize;
	private final long lengthSeed;
	private final long roomSeed;
	private final double logMin;
	private final double logSpan;
	private final List<Request> requests = new Requests();
	private volatile Figures figures;

	private Workload(int count, int minTokens, int maxTokens, int pageSize, long lengthSeed, long roomSeed) {
		this.count = count;
		this.minTokens = minTokens;
		this.maxTokens = maxTokens;
		this.pageSize = pageSize;
		this.lengthSeed = lengthSeed;
		this.roomSeed = roomSeed;
		this.logMin = Math.log(minTokens);
		this.logSpan = Math.log(maxTokens) - logMin;
	}

	/**
	 * @param count number of requests, at least 1
	 * @param minTokens shortest prompt, at least 1
	 * @param maxTokens longest prompt, at least {@code minTokens}; one request always has exactly this length so every
	 *        batch spans the whole range
	 * @param pageSize tokens per page
	 * @param lengthSeed seed of the prompt lengths
	 * @param roomSeed seed of the room ids
	 * @return the batch
	 */
	static Workload generate(int count, int minTokens, int maxTokens, int pageSize, long lengthSeed, long roomSeed) {
		if (count < 1) {
			throw new IllegalArgumentException("requests : " + count + " (expected: >= 1)");
		}
		if (minTokens < 1 || maxTokens < minTokens) {
			throw new IllegalArgumentException("tokens : " + minTokens + ".." + maxTokens
					+ " (expected: 1 <= min-tokens <= max-tokens)");
		}
		return new Workload(count, minTokens, maxTokens, pageSize, lengthSeed, roomSeed);
	}

	/** @return the requests, in order; each computed when asked for */
	List<Request> requests() {
		return requests;
	}

	int pageSize() {
		return pageSize;
	}

	private int tokens(int i) {
		if (i == count / 2) {
			return maxTokens;
		}
		double uniform = (mix(lengthSeed + (i + 1L) * GOLDEN) >>> 11) * 0x1.0p-53;
		int tokens = (int) Math.round(Math.exp(logMin + logSpan * Math.pow(uniform, SKEW)));
		return Math.max(minTokens, Math.min(maxTokens, tokens));
	}

	private int pages(int tokens) {
		return (tokens + pageSize - 1) / pageSize;
	}

	/** SplitMix64's finalizer: spreads consecutive seeds over all 64 bits. */
	private static long mix(long z) {
		z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
		z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
		return z ^ (z >>> 31);
	}

	/**
	 * A one-to-one map of the 63-bit numbers: xor-shifts and multiplications by odd numbers modulo 2^63 are each
	 * invertible, so the ids of distinct indices are distinct without remembering the ones handed out.
	 */
	static long roomId(long roomSeed, long index) {
		long z = (roomSeed + index) & Long.MAX_VALUE;
		z ^= z >>> 31;
		z = (z * 0x5851F42D4C957F2DL) & Long.MAX_VALUE;
		z ^= z >>> 29;
		z = (z * 0x14057B7EF767814FL) & Long.MAX_VALUE;
		return z ^ (z >>> 32);
	}

	private Figures figures() {
		Figures f = figures;
		if (f == null) {
			int min = Integer.MAX_VALUE;
			int max = 0;
			long tokens = 0;
			long pages = 0;
			// Indexed by page count, which the longest prompt bounds: as large as one request, not as the batch.
			int[] byPages = new int[pages(maxTokens) + 1];
			for (int i = 0; i < count; i++) {
				int t = tokens(i);
				int p = pages(t);
				min = Math.min(min, t);
				max = Math.max(max, t);
				tokens += t;
				pages += p;
				byPages[p]++;
			}
			f = new Figures(min, max, tokens, pages, byPages);
			figures = f;
		}
		return f;
	}

	/** @return pages of the longest request */
	int largestPages() {
		return pages(maxTokens);
	}

	/** @return pages of all requests */
	long totalPages() {
		return figures().totalPages();
	}

	/** @return tokens of all requests */
	long totalTokens() {
		return figures().totalTokens();
	}

	/** @return the shortest and the longest prompt */
	int minTokens() {
		return figures().minTokens();
	}

	int maxTokens() {
		return figures().maxTokens();
	}

	/**
	 * Pages a pool needs so that {@code concurrency} requests can always be in flight, bounded by a budget but never
	 * below the largest request (a pool that cannot hold it could never serve it).
	 *
	 * @param concurrency requests in flight at most
	 * @param budgetPages the most pages the pool may take
	 * @return the pool's pages
	 */
	int poolPages(int concurrency, long budgetPages) {
		int[] byPages = figures().requestsByPages();
		long topK = 0;
		int left = concurrency;
		for (int p = byPages.length - 1; p > 0 && left > 0; p--) {
			int n = Math.min(left, byPages[p]);
			topK += (long) n * p;
			left -= n;
		}
		return (int) Math.max(largestPages(), Math.min(topK, budgetPages));
	}

	/** The requests as a list, each made when asked for. */
	private final class Requests extends AbstractList<Request> implements RandomAccess {

		@Override
		public Request get(int index) {
			if (index < 0 || index >= count) {
				throw new IndexOutOfBoundsException("request " + index + " of " + count);
			}
			int tokens = tokens(index);
			return new Request(roomId(roomSeed, index), tokens, pages(tokens));
		}

		@Override
		public int size() {
			return count;
		}
	}
}
