package io.kvferry.internal.topology;

import io.kvferry.KVLayout;
import io.kvferry.TopologyException;

/**
 * Plans the moves of a stretch of tokens between KV pages whose byte orders differ: token-major ({@link KVLayout#NHD})
 * on one side and head-major ({@link KVLayout#HND}) on the other, or head-major on both sides when the pages are cut
 * by token (re-paging, head slices, a partial page). The sender reads each head of each token where its own layout
 * keeps it and names where the destination's layout wants it, so the bytes are re-laid on the way, without a copy on
 * either side, and decode's ledger checks every byte against decode's own pages as for any other write.
 *
 * <p>Each move is one run of the destination, gathered from strided chunks of the source, so that the receiver gets
 * one write per run rather than one per head and token. Into a head-major page, one move per head and per stretch of
 * tokens that stays inside one page on each head-major side: the head's tokens are adjacent there, and one token
 * apart in a token-major source. Into a token-major page from a head-major one, one move per token: its heads are
 * adjacent there, and one page of a head apart in the source. Where both sides are head-major, the head's tokens are
 * contiguous on both and move as one chunk. Stateless and thread-safe.
 */
public final class LayoutTranslation {

	private LayoutTranslation() {
	}

	/**
	 * The byte order of one side's KV pages in one layer buffer. A page of one token, or of one head (MLA's latent), is
	 * ordered the same way in both layouts: such a side counts as token-major.
	 *
	 * @param layout the layout the side declared
	 * @param pageSize tokens per page
	 * @param heads heads per token on this rank
	 * @param headBytes bytes of one head of one token
	 */
	public record Side(KVLayout layout, int pageSize, int heads, int headBytes) {

		/**
		 * @throws IllegalArgumentException when a size is below 1 or a page exceeds 2^31−1 bytes
		 */
		public Side {
			if (pageSize < 1 || heads < 1 || headBytes < 1 || (long) pageSize * heads * headBytes > Integer.MAX_VALUE) {
				throw new IllegalArgumentException("layout side : page " + pageSize + " × " + heads + " heads × "
						+ headBytes + " bytes (expected: each >= 1, a page within " + Integer.MAX_VALUE + " bytes)");
			}
		}

		/**
		 * @param side which rank and buffer, for messages
		 * @param layout the layout the side declared
		 * @param itemLen bytes of one page of the buffer
		 * @param pageSize tokens per page
		 * @param heads heads per token on this rank
		 * @return the side, its head size derived from the item length
		 * @throws TopologyException naming the side when the item does not hold whole heads of its tokens
		 */
		public static Side of(String side, KVLayout layout, int itemLen, int pageSize, int heads) {
			if (itemLen % ((long) pageSize * heads) != 0) {
				throw new TopologyException("KV layout " + layout + " on " + side + ": a page of " + itemLen
						+ " bytes does not hold " + pageSize + " tokens of " + heads + " whole heads (expected: item "
						+ "length a multiple of page size × heads, so that each head of each token can be re-laid)");
			}
			return new Side(layout, pageSize, heads, (int) (itemLen / ((long) pageSize * heads)));
		}

		/** @return whether the page's bytes are head-major in effect (HND with more than one token and one head) */
		public boolean headMajor() {
			return layout == KVLayout.HND && pageSize > 1 && heads > 1;
		}

		/** @return bytes of one page */
		public int itemLen() {
			return pageSize * heads * headBytes;
		}

		/** @return byte offset in the buffer of head {@code head} of the token at {@code slot} */
		public long offset(long slot, int head) {
			long page = slot / pageSize;
			int t = (int) (slot % pageSize);
			long inPage = headMajor() ? ((long) head * pageSize + t) * headBytes
					: ((long) t * heads + head) * headBytes;
			return page * itemLen() + inPage;
		}

		/** @return bytes from one head of a token to its next head, inside a page */
		public long headStride() {
			return headMajor() ? (long) pageSize * headBytes : headBytes;
		}

		/** @return bytes from one token's head to the next token's same head, inside a page */
		public long tokenStride() {
			return headMajor() ? headBytes : (long) heads * headBytes;
		}
	}

	/** Receives the moves of a plan: {@code count} chunks of {@code chunkLen} bytes, each side with its stride. */
	@FunctionalInterface
	public interface Move {

		/**
		 * @param srcOffset byte offset of the first chunk in the source buffer
		 * @param srcStride bytes between source chunk starts
		 * @param dstOffset byte offset of the first chunk in the destination buffer
		 * @param dstStride bytes between destination chunk starts
		 * @param chunkLen bytes per chunk
		 * @param count chunks
		 */
		void move(long srcOffset, long srcStride, long dstOffset, long dstStride, int chunkLen, int count);
	}

	/**
	 * @return whether bytes between these sides need moving head by head: either is head-major in effect, unless both
	 *         are with the same pages and heads, so that whole pages keep their order
	 */
	public static boolean needed(Side src, Side dst) {
		if (!src.headMajor() && !dst.headMajor()) {
			return false;
		}
		return !(src.headMajor() && dst.headMajor() && src.pageSize() == dst.pageSize() && src.heads() == dst.heads());
	}

	/**
	 * Plans the moves of {@code tokens} tokens from source slot {@code srcSlot} to destination slot {@code dstSlot},
	 * {@code numHeads} heads each from source head {@code srcHead} to destination head {@code dstHead}.
	 *
	 * @param maxBytes the most payload bytes of one move (at least one head of one token moves)
	 * @throws IllegalArgumentException when the heads do not fit either side, the head sizes differ, or a count is
	 *         below 1
	 */
	public static void plan(Side src, Side dst, int srcHead, int dstHead, int numHeads, long srcSlot, long dstSlot,
			long tokens, long maxBytes, Move out) {
		if (src.headBytes() != dst.headBytes() || numHeads < 1 || tokens < 1 || srcHead < 0 || dstHead < 0
				|| srcHead + numHeads > src.heads() || dstHead + numHeads > dst.heads()) {
			throw new IllegalArgumentException("layout translation : heads " + srcHead + "+" + numHeads + " of "
					+ src + " to " + dstHead + " of " + dst + ", " + tokens + " tokens (expected: equal head sizes, "
					+ "the heads inside both tokens, tokens >= 1)");
		}
		int headBytes = src.headBytes();
		if (src.headMajor() && !dst.headMajor()) {
			// A token's heads are adjacent in the token-major destination: one move per token, a head page apart.
			int maxHeads = (int) Math.min(numHeads, Math.max(1, maxBytes / headBytes));
			for (long t = 0; t < tokens; t++) {
				for (int k = 0; k < numHeads; k += maxHeads) {
					out.move(src.offset(srcSlot + t, srcHead + k), src.headStride(),
							dst.offset(dstSlot + t, dstHead + k), dst.headStride(), headBytes,
							Math.min(maxHeads, numHeads - k));
				}
			}
			return;
		}
		long maxTokens = Math.max(1, maxBytes / headBytes);
		// Both head-major: a head's tokens inside a page are adjacent on both sides and move as one chunk.
		boolean oneChunk = src.headMajor() && dst.headMajor();
		for (int k = 0; k < numHeads; k++) {
			for (long done = 0; done < tokens;) {
				long s = srcSlot + done;
				long d = dstSlot + done;
				long n = Math.min(tokens - done, maxTokens);
				if (src.headMajor()) {
					n = Math.min(n, src.pageSize() - s % src.pageSize());
				}
				if (dst.headMajor()) {
					n = Math.min(n, dst.pageSize() - d % dst.pageSize());
				}
				long from = src.offset(s, srcHead + k);
				long to = dst.offset(d, dstHead + k);
				if (oneChunk) {
					out.move(from, 0, to, 0, Math.toIntExact(n * headBytes), 1);
				}
				else {
					out.move(from, src.tokenStride(), to, dst.tokenStride(), headBytes, (int) n);
				}
				done += n;
			}
		}
	}
}
