package io.kvferry.registry.etcd;

import static org.assertj.core.api.Assertions.assertThat;

import org.jspecify.annotations.NullMarked;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * The etcd registry's package says what may be null: it is {@code @NullMarked}, and the spots that may be null
 * carry {@code @Nullable}, so an IDE or a checker shows it to users.
 */
class NullMarkedApiTest {

	@Test
	void everyApiPackageIsNullMarked() throws ClassNotFoundException {
		for (String pkg : new String[] { "io.kvferry.registry.etcd" }) {
			Package p = Class.forName(pkg + ".package-info").getPackage();
			assertThat(p.isAnnotationPresent(NullMarked.class)).as("@NullMarked on %s", pkg).isTrue();
		}
	}

	@Test
	void whatMayBeNullIsAnnotated() throws NoSuchMethodException {
		assertThat(RegistryKeys.class.getMethod("parse", String.class).getAnnotatedReturnType()
				.isAnnotationPresent(Nullable.class)).as("RegistryKeys.parse may return null").isTrue();
		assertThat(EtcdBootstrapClient.class.getMethod("user").getAnnotatedReturnType()
				.isAnnotationPresent(Nullable.class)).as("EtcdBootstrapClient.user may be null").isTrue();
	}
}
