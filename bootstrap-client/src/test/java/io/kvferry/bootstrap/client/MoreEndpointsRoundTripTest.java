package io.kvferry.bootstrap.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;

import io.kvferry.HostPort;
import io.kvferry.ParallelLayout;
import io.kvferry.bootstrap.BootstrapException;
import io.kvferry.bootstrap.PrefillRegistration;
import io.kvferry.bootstrap.RankRoute;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import reactor.test.StepVerifier;

/**
 * A rank of several network interfaces registers its further endpoints through kvferry's bootstrap server and decode
 * gets them back with its first one, which stays where SGLang's decode reads it; a server's malformed value fails the
 * look-up naming the field, and a rank's is refused with a 400.
 */
class MoreEndpointsRoundTripTest {

	private static final Duration VERIFY = Duration.ofSeconds(20);
	private static final HostPort RANK = new HostPort("10.1.1.1", 17000);
	private static final List<HostPort> MORE = List.of(new HostPort("10.2.1.1", 17000), new HostPort("fd00::1", 17000));

	@RegisterExtension
	final LocalBootstrap local = new LocalBootstrap();

	private static PrefillRegistration registration(List<HostPort> more) {
		return PrefillRegistration.prefill(ParallelLayout.SINGLE, RANK.host(), RANK.port(), 16).withIncarnation(3)
				.withMoreEndpoints(more);
	}

	@Test
	void theFurtherEndpointsComeBackAfterTheFirstOneWhichStaysWhereSglangReadsIt() throws Exception {
		HostPort bootstrap = local.start();
		ReactorBootstrapClient client = local.client();
		StepVerifier.create(client.register(bootstrap, registration(MORE)).then(client.rankRoute(bootstrap, 0, 0, 0, 0)))
				.expectNext(new RankRoute(RANK, 3, MORE))
				.expectComplete().verify(VERIFY);
		// SGLang's decode reads rank_ip and rank_port of this answer and ignores the rest.
		String answer = get(bootstrap, "/route?prefill_dp_rank=0&prefill_cp_rank=0&target_tp_rank=0&target_pp_rank=0");
		assertThat(answer).startsWith("{\"rank_ip\": \"10.1.1.1\", \"rank_port\": 17000, ")
				.contains("\"kvferry_more_endpoints\": \"10.2.1.1:17000,[fd00::1]:17000\"");
		StepVerifier.create(client.rankEndpoint(bootstrap, 0, 0, 0)).expectNext(RANK).expectComplete().verify(VERIFY);
		// A registration of one interface replaces them: none come back.
		StepVerifier.create(client.register(bootstrap, registration(List.of()))
						.then(client.rankRoute(bootstrap, 0, 0, 0, 0)))
				.expectNext(new RankRoute(RANK, 3))
				.expectComplete().verify(VERIFY);
		assertThat(get(bootstrap, "/route?prefill_dp_rank=0&prefill_cp_rank=0&target_tp_rank=0&target_pp_rank=0"))
				.doesNotContain("kvferry_more_endpoints");
	}

	@Test
	void aRanksMalformedValueIsRefusedNamingTheField() throws Exception {
		HostPort bootstrap = local.start();
		ReactorBootstrapClient client = local.client();
		String body = "{\"role\":\"Prefill\",\"attn_tp_size\":1,\"attn_tp_rank\":0,\"attn_dp_size\":1,\"attn_dp_rank\":0,"
				+ "\"pp_size\":1,\"pp_rank\":0,\"system_dp_size\":1,\"system_dp_rank\":0,\"rank_ip\":\"10.1.1.1\","
				+ "\"rank_port\":17000,\"page_size\":16,\"kvferry_more_endpoints\":\"10.2.1.1:0\"}";
		HttpResponse<String> put = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(bootstrap.httpUrl()
				+ "/route")).timeout(VERIFY).PUT(HttpRequest.BodyPublishers.ofString(body)).build(),
				HttpResponse.BodyHandlers.ofString());
		assertThat(put.statusCode()).isEqualTo(400);
		assertThat(put.body()).contains("kvferry_more_endpoints").contains("port 1..65535");
		StepVerifier.create(client.rankRoute(bootstrap, 0, 0, 0, 0)).expectError().verify(VERIFY);
	}

	@Test
	void aServersMalformedValueFailsTheLookUpNamingTheField() {
		assertThatThrownBy(() -> decode("{\"rank_ip\":\"10.1.1.1\",\"rank_port\":17000,\"kvferry_more_endpoints\":[1]}"))
				.isInstanceOf(BootstrapException.class).hasMessageContaining("'kvferry_more_endpoints' is not a text");
		assertThatThrownBy(() -> decode("{\"rank_ip\":\"10.1.1.1\",\"rank_port\":17000,"
				+ "\"kvferry_more_endpoints\":\"10.2.1.1\"}"))
				.isInstanceOf(BootstrapException.class).hasMessageContaining("invalid answer: kvferry_more_endpoints");
		assertThat(decode("{\"rank_ip\":\"10.1.1.1\",\"rank_port\":17000,\"kvferry_more_endpoints\":null}"))
				.isEqualTo(RankRoute.of(RANK));
	}

	private static RankRoute decode(String json) {
		return BootstrapCodec.decodeRankRoute("GET /route", json.getBytes(StandardCharsets.UTF_8));
	}

	private static String get(HostPort bootstrap, String path) throws Exception {
		HttpResponse<byte[]> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(bootstrap.httpUrl()
				+ path)).timeout(VERIFY).GET().build(), HttpResponse.BodyHandlers.ofByteArray());
		assertThat(r.statusCode()).isEqualTo(200);
		return new String(r.body(), StandardCharsets.UTF_8);
	}
}
