package io.kvferry;

import static org.assertj.core.api.Assertions.assertThat;

import org.jspecify.annotations.NullMarked;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * The API packages say what may be null: they are {@code @NullMarked}, and the spots that may be null carry
 * {@code @Nullable}, so an IDE or a checker shows it to users.
 */
class NullMarkedApiTest {

	@Test
	void everyApiPackageIsNullMarked() throws ClassNotFoundException {
		for (String pkg : new String[] { "io.kvferry", "io.kvferry.spi", "io.kvferry.bootstrap",
				"io.kvferry.transport.local" }) {
			Package p = Class.forName(pkg + ".package-info").getPackage();
			assertThat(p.isAnnotationPresent(NullMarked.class)).as("@NullMarked on %s", pkg).isTrue();
		}
	}

	@Test
	void whatMayBeNullIsAnnotated() throws NoSuchMethodException {
		assertThat(KVManager.class.getMethod("status", long.class).getAnnotatedReturnType()
				.isAnnotationPresent(Nullable.class)).as("KVManager.status may be null").isTrue();
		assertThat(KVStatusEvent.class.getRecordComponents()[1].getAnnotatedType().isAnnotationPresent(Nullable.class))
				.as("KVStatusEvent.previous may be null").isTrue();
	}
}
