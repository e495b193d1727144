package io.kvferry.bootstrap.client;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BiFunction;
import java.util.stream.Collectors;

import javax.net.ssl.SSLException;

import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import org.junit.jupiter.api.Test;
import reactor.core.scheduler.Schedulers;
import reactor.netty.http.client.HttpClient;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A client is a value: each setter edits a fresh copy of the settings, so clients derived from one base never see
 * each other's settings, and a setter keeps every setting it does not change.
 */
class ReactorBootstrapClientSettingsTest {

	/** Derives from {@code client} a client whose named fields differ from the base's, and by {@code variant}. */
	private record Setter(String signature, Set<String> fields,
			BiFunction<ReactorBootstrapClient, Integer, ReactorBootstrapClient> apply) {
	}

	private static final List<Setter> SETTERS = List.of(
			new Setter("timeout(Duration)", Set.of("timeout"), (c, v) -> c.timeout(Duration.ofSeconds(10 + v))),
			new Setter("registerAttempts(int)", Set.of("registerAttempts"), (c, v) -> c.registerAttempts(20 + v)),
			new Setter("backoff(Duration,Duration)", Set.of("backoffBase", "backoffCap"),
					(c, v) -> c.backoff(Duration.ofMillis(200 + v), Duration.ofSeconds(90 + v))),
			new Setter("jitter(DoubleSupplier)", Set.of("jitter"), (c, v) -> c.jitter(() -> 0.5 + v / 10.0)),
			new Setter("scheduler(Scheduler)", Set.of("scheduler"),
					(c, v) -> c.scheduler(v == 0 ? Schedulers.immediate() : new DelayRecordingScheduler())),
			new Setter("bearerToken(String)", Set.of("bearerToken"), (c, v) -> c.bearerToken("token-" + v)),
			new Setter("maxResponseBytes(int)", Set.of("maxResponseBytes"), (c, v) -> c.maxResponseBytes(2000 + v)),
			new Setter("secure()", Set.of("sslContext"), (c, v) -> c.secure()),
			new Setter("secure(SslContext)", Set.of("sslContext"), (c, v) -> c.secure(clientContext())),
			new Setter("httpClient(HttpClient)", Set.of("httpClient"), (c, v) -> c.httpClient(HttpClient.create())));

	@Test
	void clientsDerivedFromOneBaseDoNotShareSettings() {
		// Every setting differs from its default, so that a setting a copy drops shows.
		ReactorBootstrapClient base = ReactorBootstrapClient.create()
				.timeout(Duration.ofSeconds(3))
				.registerAttempts(9)
				.backoff(Duration.ofMillis(100), Duration.ofSeconds(60))
				.jitter(() -> 0.9)
				.scheduler(new DelayRecordingScheduler())
				.bearerToken("base-token")
				.maxResponseBytes(1000)
				.secure(clientContext())
				.httpClient(HttpClient.create());
		Map<String, Object> before = values(base);
		Map<String, Object> defaults = values(ReactorBootstrapClient.create());
		for (String field : before.keySet()) {
			assertThat(before.get(field)).as("base keeps %s along the chain", field).isNotEqualTo(defaults.get(field));
		}

		for (Setter setter : SETTERS) {
			ReactorBootstrapClient first = setter.apply().apply(base, 0);
			ReactorBootstrapClient second = setter.apply().apply(base, 1);
			Map<String, Object> firstValues = values(first);
			Map<String, Object> secondValues = values(second);

			assertThat(values(base)).as("base after %s", setter.signature()).isEqualTo(before);
			for (String field : before.keySet()) {
				if (setter.fields().contains(field)) {
					assertThat(firstValues.get(field)).as("%s sets %s", setter.signature(), field)
							.isNotEqualTo(before.get(field))
							.isNotEqualTo(secondValues.get(field));
					assertThat(secondValues.get(field)).as("%s sets %s", setter.signature(), field)
							.isNotEqualTo(before.get(field));
				}
				else {
					assertThat(firstValues.get(field)).as("%s keeps %s", setter.signature(), field)
							.isEqualTo(before.get(field));
					assertThat(secondValues.get(field)).as("%s keeps %s", setter.signature(), field)
							.isEqualTo(before.get(field));
				}
			}
		}
	}

	@Test
	void everySetterReturnsANewClientWithSettingsOfItsOwn() {
		ReactorBootstrapClient base = ReactorBootstrapClient.create();
		for (Setter setter : SETTERS) {
			ReactorBootstrapClient derived = setter.apply().apply(base, 0);
			assertThat(derived).as(setter.signature()).isNotSameAs(base);
			assertThat(derived.settings()).as(setter.signature()).isNotSameAs(base.settings());
		}
	}

	@Test
	void everyPublicSetterIsCoveredHere() {
		Set<String> setters = Arrays.stream(ReactorBootstrapClient.class.getDeclaredMethods())
				.filter(m -> Modifier.isPublic(m.getModifiers()) && !Modifier.isStatic(m.getModifiers()))
				.filter(m -> m.getReturnType() == ReactorBootstrapClient.class)
				.map(ReactorBootstrapClientSettingsTest::signature)
				.collect(Collectors.toSet());
		assertThat(SETTERS.stream().map(Setter::signature)).containsExactlyInAnyOrderElementsOf(setters);
	}

	/** @return every setting of {@code client}, by field name */
	private static Map<String, Object> values(ReactorBootstrapClient client) {
		Map<String, Object> values = new HashMap<>();
		for (Field field : BootstrapClientSettings.class.getDeclaredFields()) {
			if (Modifier.isStatic(field.getModifiers())) {
				continue;
			}
			try {
				values.put(field.getName(), field.get(client.settings()));
			}
			catch (IllegalAccessException e) {
				throw new AssertionError(e);
			}
		}
		return values;
	}

	private static String signature(Method method) {
		return method.getName() + Arrays.stream(method.getParameterTypes()).map(Class::getSimpleName)
				.collect(Collectors.joining(",", "(", ")"));
	}

	private static SslContext clientContext() {
		try {
			return SslContextBuilder.forClient().build();
		}
		catch (SSLException e) {
			throw new AssertionError(e);
		}
	}
}
