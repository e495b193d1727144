package io.kvferry.internal.topology;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

import io.kvferry.TopologyException;

/**
 * Decode-side context parallelism (DCP): decode spreads a room's tokens token by token over its DCP ranks, so a prefill
 * at DCP 1 sends each decode DCP rank only its own tokens, packed into that rank's pages. Follows SGLang's
 * {@code requires_dcp_relayout}, {@code prepare_dcp_token_item_lens} and {@code build_dcp_token_transfer_plan}.
 * Stateless and thread-safe.
 *
 * <p>With P tokens per page and n DCP ranks, the room's token g after decode's prefix (the prefix aligned to the
 * virtual page of {@code P·n} tokens) belongs to DCP rank {@code g mod n} and sits at local slot {@code g / n} of that
 * rank's pages (page {@code local / P}, token {@code local mod P}). A rank's tokens are n slots apart on prefill, so
 * every token is a run of its own unless both sides happen to be adjacent.
 *
 * <p>Neither side knows the room's token count, only page counts: prefill moves every slot of its pages, as with
 * equal page sizes, and a rank's slots past the pages it granted are not sent (they lie past the room's tokens). When
 * the rank's share of prefill's slots leaves part of its last page unfilled, that tail is filled with copies of the
 * first slots of the room's last prefill page (the room's own bytes, past its tokens), so that every byte of every page
 * decode granted is written exactly once.
 */
public final class DcpRelayout {

	private DcpRelayout() {
	}

	/**
	 * SGLang's {@code requires_dcp_relayout}: equal DCP sizes must pair equal DCP ranks and move pages as they are; a
	 * prefill at DCP 1 relays to a decode at DCP above 1 only for MLA KV; anything else is refused.
	 *
	 * @return whether the tokens must be spread over decode's DCP ranks
	 * @throws TopologyException for mismatched DCP ranks or an unsupported pair of DCP sizes
	 */
	public static boolean requiresRelayout(int srcDcpSize, int srcDcpRank, int dstDcpSize, int dstDcpRank,
			boolean mla) {
		if (srcDcpSize == dstDcpSize) {
			if (srcDcpRank != dstDcpRank) {
				throw new TopologyException("PD peers must connect matching DCP ranks, got prefill=" + srcDcpRank
						+ ", decode=" + dstDcpRank);
			}
			return false;
		}
		if (srcDcpSize == 1 && dstDcpSize > 1) {
			if (mla) {
				return true;
			}
			throw new TopologyException("Unsupported PD DCP topology: " + srcDcpSize + " -> " + dstDcpSize
					+ " (decode DCP requires an MLA or hybrid-MLA KV pool)");
		}
		throw new TopologyException("Unsupported PD DCP topology: " + srcDcpSize + " -> " + dstDcpSize
				+ " (expected: equal DCP sizes, or prefill DCP 1 to decode DCP above 1 with MLA)");
	}

	/**
	 * SGLang's {@code prepare_dcp_token_item_lens}: a token must have the same bytes on both sides.
	 *
	 * @throws TopologyException when the bytes per token differ
	 */
	public static void checkTokenGeometry(int buffer, int srcItemLen, int srcPageSize, int dstItemLen,
			int dstPageSize) {
		if (srcItemLen % srcPageSize != 0 || dstItemLen % dstPageSize != 0
				|| srcItemLen / srcPageSize != dstItemLen / dstPageSize) {
			throw new TopologyException("PD DCP source/destination KV geometry differs at kv[" + buffer + "]: src="
					+ srcItemLen / srcPageSize + " bytes per token, dst=" + dstItemLen / dstPageSize
					+ " bytes per token");
		}
	}

	/** @return whether a decode prefix of {@code prefixLen} tokens fills whole virtual DCP pages */
	public static boolean alignedPrefix(int prefixLen, int pageSize, int dcpSize) {
		return prefixLen % ((long) pageSize * dcpSize) == 0;
	}

	/** @return the tokens among {@code slots} after the prefix that DCP rank {@code dcpRank} holds */
	static long share(long slots, int dcpSize, int dcpRank) {
		return slots <= dcpRank ? 0 : (slots - dcpRank + dcpSize - 1) / dcpSize;
	}

	/**
	 * @param srcPages prefill pages sent so far, after decode's prefix
	 * @param dstPages pages this DCP rank asked for, after its prefix
	 * @return whether every token of those prefill pages that the rank holds and that a real token may use lands in
	 *         its pages, i.e. the rank's share of every page but the last fits
	 */
	public static boolean fits(long srcPages, long dstPages, int pageSize, int dcpSize, int dcpRank) {
		return srcPages == 0 || share((srcPages - 1) * pageSize + 1, dcpSize, dcpRank) <= dstPages * pageSize;
	}

	/**
	 * @param srcPages the room's prefill pages after decode's prefix
	 * @param dstPages pages this DCP rank asked for, after its prefix
	 * @return whether some token count that fills exactly {@code srcPages} prefill pages gives this rank exactly
	 *         {@code dstPages} pages
	 */
	public static boolean matches(long srcPages, long dstPages, int pageSize, int dcpSize, int dcpRank) {
		long fewest = pagesOf(share((srcPages - 1) * pageSize + 1, dcpSize, dcpRank), pageSize);
		long most = pagesOf(share(srcPages * pageSize, dcpSize, dcpRank), pageSize);
		return srcPages >= 1 && dstPages >= fewest && dstPages <= most;
	}

	private static long pagesOf(long tokens, int pageSize) {
		return (tokens + pageSize - 1) / pageSize;
	}

	/**
	 * The runs of one chunk for one decode DCP rank, as SGLang's {@code build_dcp_token_transfer_plan}: the tokens of
	 * the chunk's prefill pages that the rank holds, each at its local slot in the rank's pages; slots past the rank's
	 * pages are dropped, and when the chunk ends with the room's last page the rank's last page is filled up.
	 *
	 * @param srcPages the chunk's prefill pages, in room order; not modified
	 * @param first the position of {@code srcPages[0]} among the room's prefill pages after decode's prefix
	 * @param pageSize P, tokens per page on both sides
	 * @param dstPages every page the rank asked for (after its prefix), in room order; not modified
	 * @param dcpSize decode's DCP size
	 * @param dcpRank the rank's DCP rank
	 * @param last whether {@code srcPages} ends with the room's last page
	 * @return the runs in order, adjacent tokens merged only where both sides are contiguous
	 * @throws IllegalArgumentException for a negative position or page, or a size or rank out of range
	 */
	public static List<SlotRun> runs(int[] srcPages, int first, int pageSize, int[] dstPages, int dcpSize,
			int dcpRank, boolean last) {
		Objects.requireNonNull(srcPages, "srcPages");
		Objects.requireNonNull(dstPages, "dstPages");
		if (first < 0 || pageSize < 1 || dcpSize < 1 || dcpRank < 0 || dcpRank >= dcpSize) {
			throw new IllegalArgumentException("first : " + first + ", page size : " + pageSize + ", dcp : "
					+ dcpRank + "/" + dcpSize + " (expected: >= 0, >= 1, rank 0..size-1)");
		}
		long p = pageSize;
		long capacity = dstPages.length * p;
		long from = first * p;
		long sent = (first + (long) srcPages.length) * p;
		List<SlotRun> runs = new ArrayList<>();
		// The chunk's first token of this rank: the prefix is whole virtual pages, so ranks count from its end.
		long g = from + Math.floorMod(dcpRank - from, (long) dcpSize);
		for (; g < sent; g += dcpSize) {
			long local = g / dcpSize;
			if (local >= capacity) {
				break;
			}
			long s = g - from;
			add(runs, srcPage(srcPages, (int) (s / p)) * p + s % p, dstPage(dstPages, (int) (local / p)) * p
					+ local % p, 1);
		}
		if (last && srcPages.length > 0) {
			// Padding: the rank's slots past its share of the room's slots, from the start of the room's last page.
			long held = share(sent, dcpSize, dcpRank);
			long lastPage = srcPage(srcPages, srcPages.length - 1) * p;
			for (long local = held; local < capacity; local++) {
				add(runs, lastPage + (local - held) % p, dstPage(dstPages, (int) (local / p)) * p + local % p, 1);
			}
		}
		return runs;
	}

	private static void add(List<SlotRun> runs, long srcSlot, long dstSlot, int n) {
		int k = runs.size() - 1;
		SlotRun prev = k < 0 ? null : runs.get(k);
		if (prev != null && prev.srcSlot() + prev.tokens() == srcSlot && prev.dstSlot() + prev.tokens() == dstSlot
				&& prev.tokens() < Integer.MAX_VALUE) {
			runs.set(k, new SlotRun(prev.srcSlot(), prev.dstSlot(), prev.tokens() + n));
		}
		else {
			runs.add(new SlotRun(srcSlot, dstSlot, n));
		}
	}

	private static long srcPage(int[] pages, int index) {
		return check("srcPages", pages, index);
	}

	private static long dstPage(int[] pages, int index) {
		return check("dstPages", pages, index);
	}

	private static long check(String name, int[] pages, int index) {
		int page = pages[index];
		if (page < 0) {
			throw new IllegalArgumentException(name + "[" + index + "] : " + page + " (expected: >= 0)");
		}
		return page;
	}
}
