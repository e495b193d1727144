package io.kvferry.transport.synthetic;

import io.kvferry.spi.PeerLayout;
import io.kvferry.spi.RegionKind;
import io.netty.util.internal.PlatformDependent;

/**
 * The bytes a {@link SyntheticPrefill} sends: one item (a page of one KV buffer, an aux row, a state slot) at a time,
 * written into native memory that the synthetic rank then hands decode as the payload of a data frame. A pattern is a
 * pure function of its arguments, so that decode can check every byte it received against it, whatever stripe or
 * frame carried it.
 *
 * <p>Called on a synthetic rank's delivery thread, once for every item of every room: it must be quick and must not
 * block. It may be called from several threads at once, for different items.
 */
@FunctionalInterface
public interface SyntheticPattern {

	/**
	 * Writes one item of a room.
	 *
	 * @param rank the synthetic prefill rank's layout, as its handshake told decode (its TP and PP rank, layers, heads)
	 * @param room the room
	 * @param kind which of decode's region lists the item is in
	 * @param region index in that list (decode's and the synthetic rank's lists have the same order)
	 * @param ordinal which item of the room it is: for KV, the room's page (counting the pages decode already held, so
	 *        the page after a prefix of {@code n} pages is {@code n}); for aux, 0; for state, the slot's position in the
	 *        list of slots the room names for that region
	 * @param address first byte to write
	 * @param length bytes to write: the region's item length
	 */
	void fill(PeerLayout rank, long room, RegionKind kind, int region, long ordinal, long address, int length);

	/**
	 * A pattern of 64-bit words, each a hash of the room, the region, the item's ordinal and the word's index: it
	 * depends on the room, so a page left over from another room never passes for this one. Words are in native byte
	 * order; an item whose length is not a multiple of 8 ends with the low bytes of its last word.
	 *
	 * @return the pattern
	 */
	static SyntheticPattern hashed() {
		return (rank, room, kind, region, ordinal, address, length) -> {
			long seed = hashedSeed(room, kind, region, ordinal);
			int words = length >>> 3;
			for (int w = 0; w < words; w++) {
				PlatformDependent.putLong(address + 8L * w, hashedWord(seed, w));
			}
			long last = hashedWord(seed, words);
			for (int b = words << 3; b < length; b++) {
				PlatformDependent.putByte(address + b, (byte) last);
				last >>>= 8;
			}
		};
	}

	/** @return the part of {@link #hashed()}'s words that depends on the item, not on the word */
	private static long hashedSeed(long room, RegionKind kind, int region, long ordinal) {
		long h = room * 0x9E3779B97F4A7C15L;
		h ^= (kind.ordinal() + 1L) * 0xC2B2AE3D27D4EB4FL;
		h ^= (region + 1L) * 0x165667B19E3779F9L;
		return h ^ (ordinal + 1L) * 0xD6E8FEB86659FD93L;
	}

	private static long hashedWord(long seed, int word) {
		long h = seed ^ (word + 1L) * 0xC4CEB9FE1A85EC53L;
		// splitmix64 finalizer: every input bit affects every output bit.
		h = (h ^ (h >>> 30)) * 0xBF58476D1CE4E5B9L;
		h = (h ^ (h >>> 27)) * 0x94D049BB133111EBL;
		return h ^ (h >>> 31);
	}
}
