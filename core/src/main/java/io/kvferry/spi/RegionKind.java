package io.kvferry.spi;

/** Which list of a rank's regions a data block targets. */
public enum RegionKind {
	KV, AUX, STATE;

	private static final RegionKind[] VALUES = values();

	/** @throws IllegalArgumentException for an unknown ordinal (a malformed frame) */
	public static RegionKind fromOrdinal(int ordinal) {
		if (ordinal < 0 || ordinal >= VALUES.length) {
			throw new IllegalArgumentException("region kind : " + ordinal + " (expected: 0.." + (VALUES.length - 1) + ")");
		}
		return VALUES[ordinal];
	}
}
