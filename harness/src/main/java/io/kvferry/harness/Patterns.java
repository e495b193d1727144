package io.kvferry.harness;

/**
 * Deterministic 64-bit words for verifiable KV bytes: the value depends only on what the bytes mean (room, layer, K or
 * V, token, model head, word), never on which rank or page holds them, so decode can check what it received whatever
 * path the bytes took.
 */
public final class Patterns {

	/** Layer value used for aux rows. */
	public static final int AUX = -1;
	/** Layer value used for state slots. */
	public static final int STATE = -2;

	private Patterns() {
	}

	/**
	 * @param room the room
	 * @param layer model layer, or {@link #AUX} / {@link #STATE}
	 * @param buffer 0 for K (or MLA latent, or the aux/state buffer index), 1 for V
	 * @param token token position in the request (page ordinal × page size + token in page), or slot ordinal
	 * @param head model head
	 * @param word 8-byte word index within the head (or row)
	 * @return the word
	 */
	public static long word(long room, int layer, int buffer, long token, int head, int word) {
		return word(seed(room, layer, buffer, token, head), word);
	}

	/**
	 * The part of a word that does not depend on its index within the head (or row): fill and checks compute it once
	 * per head and then only {@link #word(long, int)} per word.
	 *
	 * @return the seed of the words of one head of one token (or of one row)
	 */
	public static long seed(long room, int layer, int buffer, long token, int head) {
		long h = room * 0x9E3779B97F4A7C15L;
		h ^= (layer + 3L) * 0xC2B2AE3D27D4EB4FL;
		h ^= (buffer + 1L) * 0x165667B19E3779F9L;
		h ^= (token + 1L) * 0xD6E8FEB86659FD93L;
		return h ^ (head + 1L) * 0xFF51AFD7ED558CCDL;
	}

	/**
	 * @param seed from {@link #seed}
	 * @param word 8-byte word index within the head (or row)
	 * @return the word, equal to {@link #word(long, int, int, long, int, int)} of the seed's arguments
	 */
	public static long word(long seed, int word) {
		long h = seed ^ (word + 1L) * 0xC4CEB9FE1A85EC53L;
		// splitmix64 finalizer: every input bit affects every output bit.
		h = (h ^ (h >>> 30)) * 0xBF58476D1CE4E5B9L;
		h = (h ^ (h >>> 27)) * 0x94D049BB133111EBL;
		return h ^ (h >>> 31);
	}
}
