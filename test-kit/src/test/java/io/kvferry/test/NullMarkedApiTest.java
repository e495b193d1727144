package io.kvferry.test;

import static org.assertj.core.api.Assertions.assertThat;

import org.jspecify.annotations.NullMarked;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * The test kit's packages say what may be null: they are {@code @NullMarked}, and the spots that may be null
 * carry {@code @Nullable}, so an IDE or a checker shows it to users.
 */
class NullMarkedApiTest {

	@Test
	void everyApiPackageIsNullMarked() throws ClassNotFoundException {
		for (String pkg : new String[] { "io.kvferry.test", "io.kvferry.test.tck" }) {
			Package p = Class.forName(pkg + ".package-info").getPackage();
			assertThat(p.isAnnotationPresent(NullMarked.class)).as("@NullMarked on %s", pkg).isTrue();
		}
	}

	@Test
	void whatMayBeNullIsAnnotated() throws NoSuchMethodException, NoSuchFieldException {
		assertThat(RegionSink.class.getMethod("landingZone", int.class, int.class).getAnnotatedReturnType()
				.isAnnotationPresent(Nullable.class)).as("RegionSink.landingZone may return null").isTrue();
		assertThat(RecordingHandler.class.getField("connection").getAnnotatedType()
				.isAnnotationPresent(Nullable.class)).as("RecordingHandler.connection is null until it is used")
				.isTrue();
	}
}
