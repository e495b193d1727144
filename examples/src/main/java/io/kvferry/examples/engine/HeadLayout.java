package io.kvferry.examples.engine;

/**
 * Which heads each attention TP rank holds, by the rule kvferry's head slicing assumes (SGLang's): with H KV heads and
 * TP size T, a rank holds {@code max(1, H/T)} KV heads; when T ≤ H rank r holds heads {@code r·H/T …}, when T &gt; H
 * each head is replicated on T/H consecutive ranks and rank r holds head {@code r / (T/H)}. Query heads split evenly:
 * rank r computes query heads {@code r·Q/T …}, whose KV heads are exactly the ones it holds. Immutable.
 *
 * @param totalKvHeads H, the model's KV heads
 * @param queryHeads Q, the model's query heads
 * @param tpSize T, attention TP size of the instance
 */
public record HeadLayout(int totalKvHeads, int queryHeads, int tpSize) {

	/**
	 * @throws IllegalArgumentException when T and H do not divide each other or T does not divide Q
	 */
	public HeadLayout {
		if (totalKvHeads < 1 || queryHeads < 1 || tpSize < 1) {
			throw new IllegalArgumentException("heads : " + totalKvHeads + " KV, " + queryHeads + " query, TP "
					+ tpSize + " (expected: all >= 1)");
		}
		if (tpSize <= totalKvHeads ? totalKvHeads % tpSize != 0 : tpSize % totalKvHeads != 0) {
			throw new IllegalArgumentException("tpSize : " + tpSize + " (expected: a divisor or a multiple of the "
					+ totalKvHeads + " KV heads)");
		}
		if (queryHeads % tpSize != 0 || queryHeads % totalKvHeads != 0) {
			throw new IllegalArgumentException("queryHeads : " + queryHeads + " (expected: a multiple of tpSize "
					+ tpSize + " and of the " + totalKvHeads + " KV heads)");
		}
	}

	/** @return KV heads each rank holds */
	public int kvHeadsPerRank() {
		return Math.max(1, totalKvHeads / tpSize);
	}

	/**
	 * @param rank attention TP rank
	 * @param position head position within the rank's tokens, {@code 0 ..} {@link #kvHeadsPerRank()}{@code  - 1}
	 * @return the model KV head stored there
	 */
	public int modelKvHead(int rank, int position) {
		if (tpSize <= totalKvHeads) {
			return rank * kvHeadsPerRank() + position;
		}
		return rank / (tpSize / totalKvHeads);
	}

	/**
	 * @param rank attention TP rank
	 * @param kvHead model KV head
	 * @return its position within the rank's tokens, or -1 when the rank does not hold it
	 */
	public int position(int rank, int kvHead) {
		int position = kvHead - modelKvHead(rank, 0);
		return position >= 0 && position < kvHeadsPerRank() ? position : -1;
	}

	/** @return the rank that computes query head {@code queryHead} (and holds its KV head) */
	public int rankOfQueryHead(int queryHead) {
		return queryHead / (queryHeads / tpSize);
	}
}
