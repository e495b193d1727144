package io.kvferry.cli;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;

/**
 * A batch of requests with mixed prompt lengths, as a serving engine sees them: most prompts are short (hundreds of
 * tokens), a long tail reaches the maximum (tens of thousands). Lengths depend only on the seed; room ids are distinct
 * positive numbers from their own seed. Immutable.
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

	// Skews uniform draws toward short prompts: with 128..12288 the median is ~230 tokens, the mean ~1,000.
	private static final double SKEW = 3.0;

	private final List<Request> requests;
	private final int pageSize;

	private Workload(List<Request> requests, int pageSize) {
		this.requests = Collections.unmodifiableList(requests);
		this.pageSize = pageSize;
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
		SplittableRandom lengths = new SplittableRandom(lengthSeed);
		SplittableRandom rooms = new SplittableRandom(roomSeed);
		Set<Long> used = new HashSet<>();
		double logMin = Math.log(minTokens);
		double logSpan = Math.log(maxTokens) - logMin;
		List<Request> out = new ArrayList<>(count);
		for (int i = 0; i < count; i++) {
			int tokens = (int) Math.round(Math.exp(logMin + logSpan * Math.pow(lengths.nextDouble(), SKEW)));
			tokens = Math.max(minTokens, Math.min(maxTokens, tokens));
			if (i == count / 2) {
				tokens = maxTokens;
			}
			long room;
			do {
				room = rooms.nextLong() & Long.MAX_VALUE;
			}
			while (!used.add(room));
			out.add(new Request(room, tokens, (tokens + pageSize - 1) / pageSize));
		}
		return new Workload(out, pageSize);
	}

	List<Request> requests() {
		return requests;
	}

	int pageSize() {
		return pageSize;
	}

	/** @return pages of the longest request */
	int largestPages() {
		return requests.stream().mapToInt(Request::pages).max().orElse(0);
	}

	/** @return pages of all requests */
	long totalPages() {
		return requests.stream().mapToLong(Request::pages).sum();
	}

	/** @return tokens of all requests */
	long totalTokens() {
		return requests.stream().mapToLong(Request::tokens).sum();
	}

	/** @return the shortest and the longest prompt */
	int minTokens() {
		return requests.stream().mapToInt(Request::tokens).min().orElse(0);
	}

	int maxTokens() {
		return requests.stream().mapToInt(Request::tokens).max().orElse(0);
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
		long topK = requests.stream().mapToLong(Request::pages).boxed()
				.sorted(Collections.reverseOrder()).limit(concurrency).mapToLong(Long::longValue).sum();
		return (int) Math.max(largestPages(), Math.min(topK, budgetPages));
	}
}
