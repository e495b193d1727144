package io.kvferry.metrics.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import org.jspecify.annotations.NullMarked;
import org.junit.jupiter.api.Test;

/**
 * The Micrometer binding's package says what may be null: it is {@code @NullMarked}, so an IDE or a checker
 * shows users that nothing in its API is.
 */
class NullMarkedApiTest {

	@Test
	void everyApiPackageIsNullMarked() throws ClassNotFoundException {
		for (String pkg : new String[] { "io.kvferry.metrics.micrometer" }) {
			Package p = Class.forName(pkg + ".package-info").getPackage();
			assertThat(p.isAnnotationPresent(NullMarked.class)).as("@NullMarked on %s", pkg).isTrue();
		}
	}
}
