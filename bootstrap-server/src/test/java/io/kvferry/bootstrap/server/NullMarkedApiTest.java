package io.kvferry.bootstrap.server;

import static org.assertj.core.api.Assertions.assertThat;

import org.jspecify.annotations.NullMarked;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * The bootstrap server's API package says what may be null: it is {@code @NullMarked}, and the spots that may be
 * null carry {@code @Nullable}, so an IDE or a checker shows it to users.
 */
class NullMarkedApiTest {

	@Test
	void everyApiPackageIsNullMarked() throws ClassNotFoundException {
		for (String pkg : new String[] { "io.kvferry.bootstrap.server" }) {
			Package p = Class.forName(pkg + ".package-info").getPackage();
			assertThat(p.isAnnotationPresent(NullMarked.class)).as("@NullMarked on %s", pkg).isTrue();
		}
	}

	@Test
	void whatMayBeNullIsAnnotated() throws NoSuchMethodException {
		assertThat(BootstrapServer.class.getMethod("etcdUser").getAnnotatedReturnType()
				.isAnnotationPresent(Nullable.class)).as("BootstrapServer.etcdUser may be null").isTrue();
		assertThat(BootstrapServer.class.getMethod("authToken", String.class).getAnnotatedParameterTypes()[0]
				.isAnnotationPresent(Nullable.class)).as("BootstrapServer.authToken takes null").isTrue();
	}
}
