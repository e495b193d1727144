package io.kvferry.cli;

import java.math.BigDecimal;
import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import picocli.CommandLine;

/**
 * Reads command line durations the way people write them: {@code 500ms}, {@code 1s}, {@code 2.5s}, {@code 5m},
 * {@code 1h30m}, {@code 0}; ISO-8601 ({@code PT1.5S}) is accepted too. Units: {@code ns}, {@code us}, {@code ms},
 * {@code s}, {@code m}, {@code h}, {@code d}. Negative durations are rejected. Stateless and thread-safe.
 */
public final class DurationConverter implements CommandLine.ITypeConverter<Duration> {

	private static final Pattern PART = Pattern.compile("(\\d+(?:\\.\\d+)?)(ns|us|ms|s|m|h|d)");
	private static final Pattern WHOLE = Pattern.compile("(?:" + PART.pattern() + ")+");

	/**
	 * @param text the option's value
	 * @return the duration
	 * @throws CommandLine.TypeConversionException when the text is not a non-negative duration
	 */
	@Override
	public Duration convert(String text) {
		Objects.requireNonNull(text, "text");
		String s = text.trim().toLowerCase(Locale.ROOT);
		if (s.equals("0")) {
			return Duration.ZERO;
		}
		if (s.startsWith("p")) {
			return iso(text, s);
		}
		if (!WHOLE.matcher(s).matches()) {
			throw invalid(text);
		}
		Duration total = Duration.ZERO;
		Matcher m = PART.matcher(s);
		while (m.find()) {
			total = total.plus(part(new BigDecimal(m.group(1)), m.group(2)));
		}
		return total;
	}

	private static Duration iso(String text, String lower) {
		try {
			Duration d = Duration.parse(lower.toUpperCase(Locale.ROOT));
			if (d.isNegative()) {
				throw invalid(text);
			}
			return d;
		}
		catch (DateTimeParseException e) {
			throw invalid(text);
		}
	}

	private static Duration part(BigDecimal amount, String unit) {
		long nanosPerUnit = switch (unit) {
			case "ns" -> 1L;
			case "us" -> 1_000L;
			case "ms" -> 1_000_000L;
			case "s" -> 1_000_000_000L;
			case "m" -> 60_000_000_000L;
			case "h" -> 3_600_000_000_000L;
			default -> 86_400_000_000_000L;
		};
		// Fractions (2.5s) are exact in BigDecimal; anything below a nanosecond is dropped.
		BigDecimal nanos = amount.multiply(BigDecimal.valueOf(nanosPerUnit));
		BigDecimal seconds = nanos.divideToIntegralValue(BigDecimal.valueOf(1_000_000_000L));
		long rest = nanos.subtract(seconds.multiply(BigDecimal.valueOf(1_000_000_000L))).longValue();
		return Duration.ofSeconds(seconds.longValueExact(), rest);
	}

	private static CommandLine.TypeConversionException invalid(String text) {
		return new CommandLine.TypeConversionException("duration : '" + text
				+ "' (expected: a number with a unit ns, us, ms, s, m, h or d, e.g. 500ms, 1s, 5m or 1h30m)");
	}
}
