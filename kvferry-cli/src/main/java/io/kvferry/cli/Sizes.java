package io.kvferry.cli;

import java.util.Locale;

/** Human-readable byte counts (binary units). */
final class Sizes {

	private Sizes() {
	}

	/** @return e.g. {@code 512 B}, {@code 32.0 KiB}, {@code 1.50 GiB} */
	static String bytes(long n) {
		if (n < 1024) {
			return n + " B";
		}
		if (n < 1024L * 1024) {
			return String.format(Locale.ROOT, "%.1f KiB", n / 1024.0);
		}
		if (n < 1024L * 1024 * 1024) {
			return String.format(Locale.ROOT, "%.1f MiB", n / (1024.0 * 1024));
		}
		return String.format(Locale.ROOT, "%.2f GiB", n / (1024.0 * 1024 * 1024));
	}
}
