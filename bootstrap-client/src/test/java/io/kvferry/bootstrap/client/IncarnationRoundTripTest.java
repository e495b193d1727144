package io.kvferry.bootstrap.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.time.Duration;

import io.kvferry.HostPort;
import io.kvferry.ParallelLayout;
import io.kvferry.bootstrap.BootstrapException;
import io.kvferry.bootstrap.BootstrapFields;
import io.kvferry.bootstrap.PrefillRegistration;
import io.kvferry.bootstrap.RankRoute;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import reactor.test.StepVerifier;

/**
 * A rank's incarnation travels with its registration through kvferry's bootstrap server and comes back with its
 * endpoint; a registration without one (SGLang's ranks) comes back unknown, and a later registration replaces it.
 */
class IncarnationRoundTripTest {

	private static final Duration VERIFY = Duration.ofSeconds(20);
	private static final HostPort RANK = new HostPort("10.1.1.1", 17000);

	@RegisterExtension
	final LocalBootstrap local = new LocalBootstrap();

	private static PrefillRegistration registration(long incarnation) {
		return PrefillRegistration.prefill(ParallelLayout.SINGLE, RANK.host(), RANK.port(), 16)
				.withIncarnation(incarnation);
	}

	@Test
	void theIncarnationComesBackWithTheEndpointAndARestartReplacesIt() {
		HostPort bootstrap = local.start();
		ReactorBootstrapClient client = local.client();
		long first = 0xfedcba9876543210L;
		StepVerifier.create(client.register(bootstrap, registration(first))
						.then(client.rankRoute(bootstrap, 0, 0, 0, 0)))
				.expectNext(new RankRoute(RANK, first))
				.expectComplete().verify(VERIFY);
		StepVerifier.create(client.register(bootstrap, registration(7)).then(client.rankRoute(bootstrap, 0, 0, 0, 0)))
				.expectNext(new RankRoute(RANK, 7))
				.expectComplete().verify(VERIFY);
		// The plain endpoint call is unchanged.
		StepVerifier.create(client.rankEndpoint(bootstrap, 0, 0, 0)).expectNext(RANK).expectComplete().verify(VERIFY);
	}

	@Test
	void aRegistrationWithoutAnIncarnationComesBackUnknown() {
		HostPort bootstrap = local.start();
		ReactorBootstrapClient client = local.client();
		StepVerifier.create(client.register(bootstrap, registration(PrefillRegistration.UNKNOWN_INCARNATION))
						.then(client.rankRoute(bootstrap, 0, 0, 0, 0)))
				.expectNext(RankRoute.of(RANK))
				.expectComplete().verify(VERIFY);
		assertThat(BootstrapFields.registration(registration(PrefillRegistration.UNKNOWN_INCARNATION)))
				.doesNotContainKey(BootstrapFields.INCARNATION);
	}

	@Test
	void aMalformedIncarnationIsNamed() {
		assertThatThrownBy(() -> decode("{\"rank_ip\":\"10.1.1.1\",\"rank_port\":17000,\"kvferry_incarnation\":12}"))
				.isInstanceOf(BootstrapException.class).hasMessageContaining("'kvferry_incarnation' is not a text");
		assertThatThrownBy(() -> decode("{\"rank_ip\":\"10.1.1.1\",\"rank_port\":17000,\"kvferry_incarnation\":\"+1\"}"))
				.isInstanceOf(BootstrapException.class).hasMessageContaining("expected: 1..16 hex digits");
		assertThat(decode("{\"rank_ip\":\"10.1.1.1\",\"rank_port\":17000}")).isEqualTo(RankRoute.of(RANK));
	}

	private static RankRoute decode(String json) {
		return BootstrapCodec.decodeRankRoute("GET /route", json.getBytes(StandardCharsets.UTF_8));
	}
}
