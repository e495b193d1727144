package io.kvferry.examples.engine;

import java.util.Arrays;

/**
 * One request's pages: token {@code t} of the request lives in slot {@code t mod pageSize} of page
 * {@code page(t / pageSize)}. The pages need not be adjacent; every TP rank of an instance uses the same table, as an
 * engine's scheduler allocates one set of page indices for all its ranks. Not thread-safe: the scheduler owns it.
 */
public final class PageTable {

	private int[] pages = new int[4];
	private int size;

	/** @return pages in the table */
	public int size() {
		return size;
	}

	/** @return the page holding the request's {@code i}-th page of tokens */
	public int page(int i) {
		if (i < 0 || i >= size) {
			throw new IndexOutOfBoundsException("page : " + i + " (expected: 0.." + (size - 1) + ")");
		}
		return pages[i];
	}

	/** @return a copy of pages {@code from} (inclusive) to {@code to} (exclusive), as kvferry takes them */
	public int[] pages(int from, int to) {
		if (from < 0 || from > to || to > size) {
			throw new IndexOutOfBoundsException("pages : " + from + ".." + to + " (expected: within 0.." + size + ")");
		}
		return Arrays.copyOfRange(pages, from, to);
	}

	/** @return a copy of every page */
	public int[] pages() {
		return pages(0, size);
	}

	void add(int page) {
		if (size == pages.length) {
			pages = Arrays.copyOf(pages, size * 2);
		}
		pages[size++] = page;
	}

	void clear() {
		size = 0;
	}

	@Override
	public String toString() {
		return Arrays.toString(pages());
	}
}
