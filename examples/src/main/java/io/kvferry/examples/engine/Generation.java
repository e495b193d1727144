package io.kvferry.examples.engine;

import java.util.Arrays;
import java.util.List;

import io.kvferry.KVPoll;

/**
 * What one request produced: the first token (sampled by prefill), then one token per decode step, with the logits
 * each step sampled from. Arrays are shared, not copied: treat them as read-only.
 *
 * @param room the request's room
 * @param prompt the prompt tokens
 * @param tokens the first token, then one per decode step ({@code logits.length + 1} tokens when it succeeded)
 * @param logits per decode step, the logits {@code tokens[i + 1]} was sampled from
 * @param states the room's states as decode saw them from admission on (the stream is hot: a room whose prefill was
 *        already known may start past Bootstrapping; empty when there was no transfer)
 * @param failure why the request failed, or null
 */
public record Generation(long room, int[] prompt, int[] tokens, float[][] logits, List<KVPoll> states,
		String failure) {

	/** @return whether the request generated all its tokens */
	public boolean ok() {
		return failure == null;
	}

	/** @return whether both produced the same tokens */
	public boolean sameTokens(Generation other) {
		return Arrays.equals(tokens, other.tokens);
	}

	/**
	 * @return the largest absolute difference between corresponding logits, infinite when a logit is NaN on either
	 *         side or the step counts differ
	 */
	public double maxLogitDifference(Generation other) {
		if (logits.length != other.logits.length) {
			return Double.POSITIVE_INFINITY;
		}
		double max = 0;
		for (int s = 0; s < logits.length; s++) {
			if (logits[s].length != other.logits[s].length) {
				return Double.POSITIVE_INFINITY;
			}
			for (int i = 0; i < logits[s].length; i++) {
				double diff = Math.abs((double) logits[s][i] - other.logits[s][i]);
				if (Double.isNaN(diff)) {
					return Double.POSITIVE_INFINITY;
				}
				max = Math.max(max, diff);
			}
		}
		return max;
	}

	@Override
	public String toString() {
		return "Generation{room=" + room + ", prompt=" + prompt.length + " tokens, tokens=" + Arrays.toString(tokens)
				+ ", states=" + states + (failure == null ? "" : ", failure=" + failure) + '}';
	}
}
