package io.kvferry.examples.engine;

import java.nio.FloatBuffer;
import java.util.Arrays;
import java.util.Random;

/**
 * A decoder-only transformer small enough to run in plain Java: token embedding, then per layer RMSNorm, grouped-query
 * attention with rotary positions, RMSNorm and a SwiGLU MLP, each with a residual connection; a final RMSNorm and the
 * LM head. Weights are uniform random with unit-variance outputs, drawn from the configuration's seed, so the same
 * configuration always is the same model.
 *
 * <p>The model keeps no state of its own: each {@link #forward} call computes one token at one position, stores that
 * token's K and V of every layer in a {@link PagedKVCache} through the request's {@link PageTable}, and attends over
 * the request's tokens {@code 0 .. position} by reading K and V back through the same table. Whichever ranks hold
 * the heads, and whichever process wrote them, the arithmetic is the same, in the same order: a decode instance that
 * continues from transferred KV computes bit for bit what one process computes. Float arithmetic only, and
 * {@link StrictMath} for every transcendental, so results do not depend on the JIT. Thread-safe (immutable weights, no
 * shared scratch).
 */
public final class TinyTransformer {

	private static final float EPS = 1e-5f;

	private final TinyConfig config;
	private final float[] embedding;
	private final Layer[] layers;
	private final float[] finalNorm;
	private final float[] lmHead;
	private final double[] inverseFrequency;

	private record Layer(float[] attnNorm, float[] wq, float[] wk, float[] wv, float[] wo, float[] mlpNorm,
			float[] wGate, float[] wUp, float[] wDown) {
	}

	/** Draws the weights of {@code config}'s model. */
	public TinyTransformer(TinyConfig config) {
		this.config = config;
		Random random = new Random(config.weightSeed());
		int d = config.hidden();
		int kv = config.kvHeads() * config.headDim();
		embedding = uniform(random, config.vocab() * d, 1);
		layers = new Layer[config.layers()];
		for (int l = 0; l < layers.length; l++) {
			layers[l] = new Layer(norm(random, d), matrix(random, d, d), matrix(random, kv, d),
					matrix(random, kv, d), matrix(random, d, d), norm(random, d), matrix(random, config.ffn(), d),
					matrix(random, config.ffn(), d), matrix(random, d, config.ffn()));
		}
		finalNorm = norm(random, d);
		lmHead = matrix(random, config.vocab(), d);
		int half = config.headDim() / 2;
		inverseFrequency = new double[half];
		for (int i = 0; i < half; i++) {
			inverseFrequency[i] = 1 / StrictMath.pow(config.ropeTheta(), (2.0 * i) / config.headDim());
		}
	}

	public TinyConfig config() {
		return config;
	}

	/**
	 * Runs one token through the model.
	 *
	 * @param token the token
	 * @param position its position in the request (its K and V go to that slot of {@code table})
	 * @param cache where K and V of the request live
	 * @param table the request's pages; must already cover {@code position}
	 * @param wantLogits whether to compute the LM head (prefill needs it only for the last prompt token)
	 * @return the logits over the vocabulary, or null when not wanted
	 */
	public float[] forward(int token, int position, PagedKVCache cache, PageTable table, boolean wantLogits) {
		if (token < 0 || token >= config.vocab()) {
			throw new IllegalArgumentException("token : " + token + " (expected: 0.." + (config.vocab() - 1) + ")");
		}
		if (position < 0 || position >= table.size() * cache.pageSize()) {
			throw new IllegalArgumentException("position : " + position + " (expected: 0.."
					+ (table.size() * cache.pageSize() - 1) + ", the tokens the page table covers)");
		}
		int d = config.hidden();
		int kvWidth = config.kvHeads() * config.headDim();
		float[] x = new float[d];
		System.arraycopy(embedding, token * d, x, 0, d);
		float[] h = new float[d];
		float[] q = new float[d];
		float[] k = new float[kvWidth];
		float[] v = new float[kvWidth];
		float[] attn = new float[d];
		float[] out = new float[d];
		float[] gate = new float[config.ffn()];
		float[] up = new float[config.ffn()];
		float[] scores = new float[position + 1];
		for (int l = 0; l < layers.length; l++) {
			Layer w = layers[l];
			rmsNorm(x, w.attnNorm, h);
			matVec(w.wq, h, q);
			matVec(w.wk, h, k);
			matVec(w.wv, h, v);
			rotate(q, config.queryHeads(), position);
			rotate(k, config.kvHeads(), position);
			cache.write(l, table, position, k, v);
			attend(l, q, position, cache, table, scores, attn);
			matVec(w.wo, attn, out);
			add(x, out);
			rmsNorm(x, w.mlpNorm, h);
			matVec(w.wGate, h, gate);
			matVec(w.wUp, h, up);
			for (int i = 0; i < gate.length; i++) {
				gate[i] = silu(gate[i]) * up[i];
			}
			matVec(w.wDown, gate, out);
			add(x, out);
		}
		if (!wantLogits) {
			return null;
		}
		rmsNorm(x, finalNorm, h);
		float[] logits = new float[config.vocab()];
		matVec(lmHead, h, logits);
		return logits;
	}

	/**
	 * Runs prompt tokens {@code from .. to - 1} (one prefill chunk) at their positions.
	 *
	 * @return the logits after the last prompt token when {@code to} is the prompt's end, else null
	 */
	public float[] prefill(int[] prompt, int from, int to, PagedKVCache cache, PageTable table) {
		float[] logits = null;
		for (int position = from; position < to; position++) {
			logits = forward(prompt[position], position, cache, table, position == prompt.length - 1);
		}
		return logits;
	}

	/** @return the greedy choice: the index of the largest logit (the first one on ties) */
	public static int argmax(float[] logits) {
		int best = 0;
		for (int i = 1; i < logits.length; i++) {
			if (logits[i] > logits[best]) {
				best = i;
			}
		}
		return best;
	}

	// Causal attention of every query head over the request's tokens 0..position, reading K and V from the rank that
	// computes the head, through the page table, straight from native memory.
	private void attend(int layer, float[] q, int position, PagedKVCache cache, PageTable table, float[] scores,
			float[] out) {
		int headDim = config.headDim();
		int pageSize = cache.pageSize();
		float scale = (float) (1 / StrictMath.sqrt(headDim));
		Arrays.fill(out, 0);
		for (int qh = 0; qh < config.queryHeads(); qh++) {
			RankKVCache rank = cache.rankForQueryHead(qh);
			int kvPosition = cache.heads().position(rank.rank(), qh / config.groupSize());
			FloatBuffer kb = rank.k(layer);
			FloatBuffer vb = rank.v(layer);
			int qo = qh * headDim;
			float max = Float.NEGATIVE_INFINITY;
			for (int t = 0; t <= position; t++) {
				int base = rank.index(table.page(t / pageSize), t % pageSize, kvPosition);
				float s = 0;
				for (int i = 0; i < headDim; i++) {
					s += q[qo + i] * kb.get(base + i);
				}
				s *= scale;
				scores[t] = s;
				// NaN (a slot that was never written) must win, so that it shows in the logits.
				max = s > max || Float.isNaN(s) ? s : max;
			}
			float sum = 0;
			for (int t = 0; t <= position; t++) {
				scores[t] = (float) StrictMath.exp(scores[t] - max);
				sum += scores[t];
			}
			for (int t = 0; t <= position; t++) {
				int base = rank.index(table.page(t / pageSize), t % pageSize, kvPosition);
				float p = scores[t] / sum;
				for (int i = 0; i < headDim; i++) {
					out[qo + i] += p * vb.get(base + i);
				}
			}
		}
	}

	// Rotary positions, rotate-half form: element i pairs with element i + headDim/2 of the same head.
	private void rotate(float[] x, int heads, int position) {
		int headDim = config.headDim();
		int half = headDim / 2;
		for (int i = 0; i < half; i++) {
			double angle = position * inverseFrequency[i];
			float cos = (float) StrictMath.cos(angle);
			float sin = (float) StrictMath.sin(angle);
			for (int hd = 0; hd < heads; hd++) {
				int a = hd * headDim + i;
				int b = a + half;
				float x1 = x[a];
				float x2 = x[b];
				x[a] = x1 * cos - x2 * sin;
				x[b] = x2 * cos + x1 * sin;
			}
		}
	}

	private static void rmsNorm(float[] x, float[] weight, float[] out) {
		float squares = 0;
		for (float e : x) {
			squares += e * e;
		}
		float inv = (float) (1 / StrictMath.sqrt(squares / x.length + EPS));
		for (int i = 0; i < x.length; i++) {
			out[i] = x[i] * inv * weight[i];
		}
	}

	// out = W x, W row-major [out.length][x.length]
	private static void matVec(float[] w, float[] x, float[] out) {
		int cols = x.length;
		for (int r = 0; r < out.length; r++) {
			float s = 0;
			int base = r * cols;
			for (int c = 0; c < cols; c++) {
				s += w[base + c] * x[c];
			}
			out[r] = s;
		}
	}

	private static void add(float[] x, float[] y) {
		for (int i = 0; i < x.length; i++) {
			x[i] += y[i];
		}
	}

	private static float silu(float x) {
		return (float) (x / (1 + StrictMath.exp(-x)));
	}

	// Rows of unit-variance output for unit-variance input: uniform in ±sqrt(3 / fanIn).
	private static float[] matrix(Random random, int rows, int fanIn) {
		return uniform(random, rows * fanIn, (float) StrictMath.sqrt(3.0 / fanIn));
	}

	private static float[] norm(Random random, int n) {
		float[] w = uniform(random, n, 0.1f);
		for (int i = 0; i < n; i++) {
			w[i] += 1;
		}
		return w;
	}

	private static float[] uniform(Random random, int n, float bound) {
		float[] w = new float[n];
		for (int i = 0; i < n; i++) {
			w[i] = (random.nextFloat() * 2 - 1) * bound;
		}
		return w;
	}
}
