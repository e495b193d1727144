package io.kvferry.spi;

/** The bounds of the text fields of messages, counted in bytes of UTF-8 as the wire counts them. */
final class Texts {

	private Texts() {
	}

	/** @return bytes of {@code s} in UTF-8 (an unpaired surrogate counts as the one byte of its replacement) */
	static long utf8Length(CharSequence s) {
		long bytes = 0;
		for (int i = 0; i < s.length(); i++) {
			char c = s.charAt(i);
			if (c < 0x80) {
				bytes++;
			}
			else if (c < 0x800) {
				bytes += 2;
			}
			else if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
				bytes += 4;
				i++;
			}
			else if (Character.isSurrogate(c)) {
				bytes++;
			}
			else {
				bytes += 3;
			}
		}
		return bytes;
	}

	/**
	 * Refuses a name that is longer than {@code maxBytes} or holds a control character: it ends up in log lines and
	 * refusals, which must stay one line each.
	 */
	static void check(String field, String value, int maxBytes) {
		long bytes = utf8Length(value);
		if (bytes > maxBytes) {
			throw new IllegalArgumentException(field + " : " + bytes + " bytes (expected: at most " + maxBytes + ")");
		}
		for (int i = 0; i < value.length(); i++) {
			if (Character.isISOControl(value.charAt(i))) {
				throw new IllegalArgumentException(field + " : a control character at index " + i
						+ " (expected: none)");
			}
		}
	}

	/**
	 * @return {@code s} cut to at most {@code maxBytes} bytes of UTF-8 (at a character, never inside a surrogate
	 *         pair), with "..." at the end when it was cut
	 */
	static String cut(String s, int maxBytes) {
		if (s.length() <= maxBytes / 3 || utf8Length(s) <= maxBytes) {
			return s;
		}
		StringBuilder b = new StringBuilder();
		long bytes = 3;
		for (int i = 0; i < s.length(); i++) {
			int end = Character.isHighSurrogate(s.charAt(i)) && i + 1 < s.length()
					&& Character.isLowSurrogate(s.charAt(i + 1)) ? i + 2 : i + 1;
			long next = utf8Length(s.subSequence(i, end));
			if (bytes + next > maxBytes) {
				break;
			}
			b.append(s, i, end);
			bytes += next;
			i = end - 1;
		}
		return b.append("...").toString();
	}
}
