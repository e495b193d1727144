package io.kvferry.internal;

import java.util.Arrays;
import java.util.List;

import io.kvferry.StateKind;

/**
 * A room's state indices as one list per state component: the distinct declared kinds in the order they first
 * appear among the state regions, or a single list for every region when no kinds are declared; and the check that an
 * index list names each value once. Stateless.
 */
final class StateLists {

	private StateLists() {
	}

	/** @return how many index lists a room names: the distinct kinds, or 1 when none are declared */
	static int components(List<StateKind> kinds) {
		return kinds.isEmpty() ? 1 : (int) kinds.stream().distinct().count();
	}

	/** @return the component of state region {@code region} */
	static int componentOf(List<StateKind> kinds, int region) {
		if (kinds.isEmpty()) {
			return 0;
		}
		return kinds.stream().distinct().toList().indexOf(kinds.get(region));
	}

	/** @return the kind of a component, or null when no kinds are declared */
	static StateKind kindOf(List<StateKind> kinds, int component) {
		return kinds.isEmpty() ? null : kinds.stream().distinct().toList().get(component);
	}

	/**
	 * Checks that a room names one list per component; with no state region at all, nothing or one empty list.
	 *
	 * @throws IllegalArgumentException naming the counts
	 */
	static int[][] check(List<StateKind> kinds, int regions, int[][] lists) {
		int[][] copy = new int[lists.length][];
		for (int i = 0; i < lists.length; i++) {
			copy[i] = lists[i].clone();
		}
		if (regions == 0) {
			for (int[] l : copy) {
				if (l.length > 0) {
					throw new IllegalArgumentException("state index given but this rank registered no such buffers");
				}
			}
			return new int[][] { new int[0] };
		}
		int expected = components(kinds);
		if (copy.length != expected) {
			throw new IllegalArgumentException("stateIndices : " + copy.length + " lists (expected: " + expected
					+ ", one per state component " + (kinds.isEmpty() ? "(no kinds declared)"
							: kinds.stream().distinct().toList()) + ")");
		}
		return copy;
	}

	/** @return every list, one after the other */
	static int[] flatten(int[][] lists) {
		// Loops, not streams, here and below: once per room on the caller's thread, before its request goes out.
		int n = 0;
		for (int[] l : lists) {
			n += l.length;
		}
		int[] flat = new int[n];
		int at = 0;
		for (int[] l : lists) {
			System.arraycopy(l, 0, flat, at, l.length);
			at += l.length;
		}
		return flat;
	}

	/** @return the length of each list, or none when no kinds are declared (one list for all regions) */
	static int[] counts(List<StateKind> kinds, int[][] lists) {
		if (kinds.isEmpty()) {
			return new int[0];
		}
		int[] counts = new int[lists.length];
		for (int i = 0; i < lists.length; i++) {
			counts[i] = lists[i].length;
		}
		return counts;
	}

	/** @return the lists {@link #flatten} and {@link #counts} made */
	static int[][] split(int[] flat, int[] counts) {
		if (counts.length == 0) {
			return new int[][] { flat };
		}
		int[][] out = new int[counts.length][];
		int at = 0;
		for (int i = 0; i < counts.length; i++) {
			out[i] = Arrays.copyOfRange(flat, at, at + counts[i]);
			at += counts[i];
		}
		return out;
	}

	/** @return the indices each state region is written at: its component's list */
	static int[][] perRegion(List<StateKind> kinds, int regions, int[][] lists) {
		int[][] out = new int[regions][];
		for (int i = 0; i < regions; i++) {
			int c = componentOf(kinds, i);
			out[i] = c < lists.length ? lists[c] : new int[0];
		}
		return out;
	}

	/**
	 * @return a value an index list (pages, or one region's state slots) names more than once, or null when they are
	 *         distinct; sorts a copy
	 */
	static Integer repeated(int[] values) {
		int[] sorted = values.clone();
		Arrays.sort(sorted);
		for (int i = 1; i < sorted.length; i++) {
			if (sorted[i] == sorted[i - 1]) {
				return sorted[i];
			}
		}
		return null;
	}
}
