package io.kvferry.cli;

import java.time.Duration;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class DurationConverterTest {

	private final DurationConverter converter = new DurationConverter();

	@Test
	void readsEveryUnit() {
		assertThat(converter.convert("250ns")).isEqualTo(Duration.ofNanos(250));
		assertThat(converter.convert("40us")).isEqualTo(Duration.ofNanos(40_000));
		assertThat(converter.convert("500ms")).isEqualTo(Duration.ofMillis(500));
		assertThat(converter.convert("1s")).isEqualTo(Duration.ofSeconds(1));
		assertThat(converter.convert("5m")).isEqualTo(Duration.ofMinutes(5));
		assertThat(converter.convert("2h")).isEqualTo(Duration.ofHours(2));
		assertThat(converter.convert("1d")).isEqualTo(Duration.ofDays(1));
	}

	@Test
	void addsCombinedUnitsAndFractions() {
		assertThat(converter.convert("1h30m")).isEqualTo(Duration.ofMinutes(90));
		assertThat(converter.convert("1m30s500ms")).isEqualTo(Duration.ofMillis(90_500));
		assertThat(converter.convert("2.5s")).isEqualTo(Duration.ofMillis(2_500));
		assertThat(converter.convert("0.25ms")).isEqualTo(Duration.ofNanos(250_000));
	}

	@Test
	void acceptsZeroIsoAndSurroundingSpaceAndCase() {
		assertThat(converter.convert("0")).isZero();
		assertThat(converter.convert("PT1.5S")).isEqualTo(Duration.ofMillis(1_500));
		assertThat(converter.convert(" 10S ")).isEqualTo(Duration.ofSeconds(10));
	}

	@ParameterizedTest
	@ValueSource(strings = { "", "5", "s", "-1s", "1x", "1 s", "1s2", "ms500", "1.s", "PT-1S", "P" })
	void rejectsTextThatIsNotANonNegativeDuration(String text) {
		assertThatThrownBy(() -> converter.convert(text))
				.isInstanceOf(CommandLine.TypeConversionException.class)
				.hasMessageContaining("duration : '" + text + "'")
				.hasMessageContaining("e.g. 500ms, 1s, 5m");
	}
}
