package io.kvferry.examples.engine;

/**
 * The shape of the tiny transformer: a decoder-only model with grouped-query attention (GQA), RMSNorm, a SwiGLU MLP
 * and rotary positions. Its weights are drawn from {@code weightSeed}, so one configuration is one fixed model.
 *
 * @param layers decoder layers
 * @param queryHeads attention (query) heads
 * @param kvHeads KV heads; each serves {@code queryHeads / kvHeads} query heads
 * @param headDim elements per head (even, for rotary positions)
 * @param ffn inner width of the MLP
 * @param vocab vocabulary size
 * @param ropeTheta base of the rotary frequencies
 * @param weightSeed where the weights come from
 */
public record TinyConfig(int layers, int queryHeads, int kvHeads, int headDim, int ffn, int vocab, double ropeTheta,
		long weightSeed) {

	/**
	 * @throws IllegalArgumentException naming the first field out of range
	 */
	public TinyConfig {
		positive("layers", layers);
		positive("queryHeads", queryHeads);
		positive("kvHeads", kvHeads);
		positive("headDim", headDim);
		positive("ffn", ffn);
		positive("vocab", vocab);
		if (queryHeads % kvHeads != 0) {
			throw new IllegalArgumentException("queryHeads : " + queryHeads + " (expected: a multiple of kvHeads "
					+ kvHeads + ")");
		}
		if (headDim % 2 != 0) {
			throw new IllegalArgumentException("headDim : " + headDim + " (expected: even, for rotary positions)");
		}
		if (!(ropeTheta > 1)) {
			throw new IllegalArgumentException("ropeTheta : " + ropeTheta + " (expected: > 1)");
		}
	}

	/** @return 3 layers, 8 query heads and 4 KV heads of 16, MLP 256, vocabulary 128: about 160 k parameters */
	public static TinyConfig tiny() {
		return new TinyConfig(3, 8, 4, 16, 256, 128, 10_000, 20_240_601L);
	}

	/** @return the width of the residual stream: {@code queryHeads × headDim} */
	public int hidden() {
		return queryHeads * headDim;
	}

	/** @return query heads that share one KV head */
	public int groupSize() {
		return queryHeads / kvHeads;
	}

	/** @return bytes of one token's K (or V) for one head, in fp32 */
	public int headBytes() {
		return headDim * Float.BYTES;
	}

	private static void positive(String name, int value) {
		if (value < 1) {
			throw new IllegalArgumentException(name + " : " + value + " (expected: >= 1)");
		}
	}
}
