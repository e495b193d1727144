package io.kvferry.internal.topology;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

import io.kvferry.TopologyException;

/**
 * Maps a room's tokens from prefill pages of P tokens onto decode pages of D tokens, P and D powers of two (either
 * larger, or equal). Stateless and thread-safe.
 *
 * <p>Token t after decode's prefix sits in prefill page {@code src[t / P]} at token {@code t mod P} and in decode page
 * {@code dst[t / D]} at token {@code t mod D}; both layouts hold a page's tokens one after the other, so pieces of
 * {@code min(P, D)} tokens are contiguous on both sides, and adjacent pieces merge while both sides' slots advance
 * together.
 *
 * <p>Neither side knows the room's token count, only its page counts Np and Nd: the tokens that move are the
 * {@code min(Np·P, Nd·D)} slots both sides hold, and the counts must describe one token count, i.e. the slot ranges
 * {@code ((Np−1)·P, Np·P]} and {@code ((Nd−1)·D, Nd·D]} must meet. When D &gt; P, decode's last page has slots past
 * prefill's last page: they are filled with copies of prefill's last page (bytes of the room's own pages, past its
 * tokens, as the unused tail of a last page is with equal page sizes), so that every byte of every page decode granted
 * is written exactly once. When P &gt; D, the tail of prefill's last page past decode's last page is not sent.
 */
public final class Repaging {

	private Repaging() {
	}

	/**
	 * Checks that prefill and decode pages can be mapped onto each other.
	 *
	 * @throws TopologyException when the sizes differ and either is not a power of two
	 */
	public static void checkPageSizes(int prefillPageSize, int decodePageSize) {
		if (prefillPageSize != decodePageSize
				&& (Integer.bitCount(prefillPageSize) != 1 || Integer.bitCount(decodePageSize) != 1)) {
			throw new TopologyException("page sizes differ and are not both powers of two: prefill page_size="
					+ prefillPageSize + ", decode page_size=" + decodePageSize
					+ " (expected: equal, or powers of two so that one page size divides the other)");
		}
	}

	/**
	 * @param srcPages prefill pages sent so far, after decode's prefix
	 * @param dstPages decode pages asked for, after its prefix
	 * @return whether every one of those prefill pages starts at a slot decode holds
	 */
	public static boolean fits(long srcPages, int prefillPageSize, long dstPages, int decodePageSize) {
		return srcPages == 0 || (srcPages - 1) * prefillPageSize < dstPages * decodePageSize;
	}

	/**
	 * @param srcPages the room's prefill pages after decode's prefix
	 * @param dstPages decode pages asked for, after its prefix
	 * @return whether the two page counts describe one token count
	 */
	public static boolean matches(long srcPages, int prefillPageSize, long dstPages, int decodePageSize) {
		return (srcPages - 1) * prefillPageSize < dstPages * decodePageSize
				&& (dstPages - 1) * decodePageSize < srcPages * prefillPageSize;
	}

	/**
	 * The runs of one chunk: its prefill pages, placed at {@code first} (a position among the room's prefill pages
	 * after decode's prefix), mapped onto decode's pages; tokens past decode's last page are dropped, and when the
	 * chunk ends with the room's last page the slots of decode's last page past it are filled from that page.
	 *
	 * @param srcPages the chunk's prefill pages, in room order; not modified
	 * @param first the position of {@code srcPages[0]} among the room's prefill pages after the prefix
	 * @param prefillPageSize P, tokens per prefill page
	 * @param dstPages every decode page asked for (after its prefix), in room order; not modified
	 * @param decodePageSize D, tokens per decode page
	 * @param last whether {@code srcPages} ends with the room's last page
	 * @return the runs in order
	 * @throws IllegalArgumentException for a negative position or page, or a page size below 1
	 */
	public static List<SlotRun> runs(int[] srcPages, int first, int prefillPageSize, int[] dstPages,
			int decodePageSize, boolean last) {
		Objects.requireNonNull(srcPages, "srcPages");
		Objects.requireNonNull(dstPages, "dstPages");
		if (first < 0 || prefillPageSize < 1 || decodePageSize < 1) {
			throw new IllegalArgumentException("first : " + first + ", page sizes : " + prefillPageSize + "/"
					+ decodePageSize + " (expected: >= 0 and >= 1)");
		}
		long p = prefillPageSize;
		long d = decodePageSize;
		long capacity = dstPages.length * d;
		long from = first * p;
		long sent = (first + (long) srcPages.length) * p;
		long to = Math.min(sent, capacity);
		long end = last && srcPages.length > 0 ? capacity : to;
		List<SlotRun> runs = new ArrayList<>();
		// The run being extended, made an object only once the next slot breaks it: a contiguous chunk is one run
		// however many pages it spans, and costs one object.
		long runSrc = -1;
		long runDst = -1;
		long runTokens = 0;
		long t = from;
		while (t < end) {
			// Past the chunk's pages only the padding of decode's last page: the same prefill page again.
			long s = t < sent ? t - from : (srcPages.length - 1) * p + (t - sent) % p;
			int page = checkPage("srcPages", (int) (s / p), srcPages);
			int dstPage = checkPage("dstPages", (int) (t / d), dstPages);
			long inSrc = s % p;
			long inDst = t % d;
			long n = Math.min(Math.min(p - inSrc, d - inDst), (t < sent ? Math.min(sent, end) : end) - t);
			long srcSlot = page * p + inSrc;
			long dstSlot = dstPage * d + inDst;
			if (runTokens > 0 && runSrc + runTokens == srcSlot && runDst + runTokens == dstSlot
					&& runTokens + n <= Integer.MAX_VALUE) {
				runTokens += n;
			}
			else {
				if (runTokens > 0) {
					runs.add(new SlotRun(runSrc, runDst, (int) runTokens));
				}
				runSrc = srcSlot;
				runDst = dstSlot;
				runTokens = n;
			}
			t += n;
		}
		if (runTokens > 0) {
			runs.add(new SlotRun(runSrc, runDst, (int) runTokens));
		}
		return runs;
	}

	private static int checkPage(String name, int index, int[] pages) {
		int page = pages[index];
		if (page < 0) {
			throw new IllegalArgumentException(name + "[" + index + "] : " + page + " (expected: >= 0)");
		}
		return page;
	}
}
