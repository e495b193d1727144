package io.kvferry.harness;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Random;

import org.jspecify.annotations.NullMarked;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * The harness's package says what may be null: it is {@code @NullMarked}, and the spots that may be null carry
 * {@code @Nullable}, so an IDE or a checker shows it to users.
 */
class NullMarkedApiTest {

	@Test
	void everyApiPackageIsNullMarked() throws ClassNotFoundException {
		for (String pkg : new String[] { "io.kvferry.harness" }) {
			Package p = Class.forName(pkg + ".package-info").getPackage();
			assertThat(p.isAnnotationPresent(NullMarked.class)).as("@NullMarked on %s", pkg).isTrue();
		}
	}

	@Test
	void whatMayBeNullIsAnnotated() throws NoSuchMethodException {
		assertThat(RoomResult.class.getRecordComponents()[4].getAnnotatedType().isAnnotationPresent(Nullable.class))
				.as("RoomResult.failure may be null").isTrue();
		assertThat(PageAllocator.class.getMethod("allocate", int.class, Random.class, boolean.class)
				.getAnnotatedReturnType().isAnnotationPresent(Nullable.class))
				.as("PageAllocator.allocate may return null").isTrue();
	}
}
