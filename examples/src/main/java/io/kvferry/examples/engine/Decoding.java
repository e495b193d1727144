package io.kvferry.examples.engine;

import java.util.ArrayList;
import java.util.List;

/**
 * One request in the running decode batch: greedy generation from the KV its page table already holds (the prompt's,
 * computed here or transferred), one token per {@link #step}. Owned by one scheduler thread.
 */
final class Decoding {

	private final PageTable table;
	private final int newTokens;
	private final List<float[]> logits = new ArrayList<>();
	private final int[] tokens;
	private int position;

	/**
	 * @param table pages holding the prompt's KV
	 * @param promptLength tokens the table holds; the first decode step writes position {@code promptLength}
	 * @param firstToken the token prefill sampled after the prompt
	 * @param newTokens decode steps to run
	 */
	Decoding(PageTable table, int promptLength, int firstToken, int newTokens) {
		this.table = table;
		this.newTokens = newTokens;
		this.tokens = new int[newTokens + 1];
		this.tokens[0] = firstToken;
		this.position = promptLength;
	}

	boolean done() {
		return logits.size() == newTokens;
	}

	/** Feeds the last token at the next position (growing the table by a page when full) and samples the next. */
	void step(TinyTransformer model, PagedKVCache cache) {
		cache.reserve(table, position + 1);
		float[] l = model.forward(tokens[logits.size()], position, cache, table, true);
		logits.add(l);
		tokens[logits.size()] = TinyTransformer.argmax(l);
		position++;
	}

	int[] tokens() {
		return tokens;
	}

	float[][] logits() {
		return logits.toArray(float[][]::new);
	}
}
