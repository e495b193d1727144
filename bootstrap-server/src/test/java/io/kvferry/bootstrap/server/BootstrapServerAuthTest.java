package io.kvferry.bootstrap.server;

import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The optional bearer token: writes need it (401 otherwise), reads stay open. */
class BootstrapServerAuthTest {

	private static final String TOKEN = "s3cret-token";
	private static final String REGISTRATION = TestHttp.registration(1, 0, 1, 0, 1, 0, "10.0.0.1", 5000);

	private DisposableBootstrapServer server;
	private TestHttp http;

	@BeforeEach
	void bind() {
		server = BootstrapServer.create().host("127.0.0.1").port(0).authToken(TOKEN).bindNow();
		http = new TestHttp(server.address());
	}

	@AfterEach
	void dispose() {
		server.disposeNow();
	}

	@Test
	void refusesAWriteWithoutAToken() {
		HttpResponse<String> response = http.put("/route", REGISTRATION);
		assertThat(response.statusCode()).isEqualTo(401);
		assertThat(response.headers().firstValue("www-authenticate")).hasValue("Bearer");
		assertThat(response.body()).startsWith("Authorization : missing");
		assertThat(server.registeredCount()).isZero();
	}

	@ParameterizedTest
	@ValueSource(strings = { "Bearer wrong", "Bearer s3cret-token-longer", "Basic czNjcmV0", "Bearer " })
	void refusesAWriteWithAWrongToken(String authorization) {
		HttpResponse<String> response = http.send("PUT", "/route", BodyPublishers.ofString(REGISTRATION),
				"Authorization", authorization);
		assertThat(response.statusCode()).isEqualTo(401);
		assertThat(response.body()).doesNotContain(TOKEN);
		assertThat(server.registeredCount()).isZero();
	}

	@Test
	void acceptsWritesWithTheTokenAndKeepsReadsOpen() {
		HttpResponse<String> put = http.send("PUT", "/route", BodyPublishers.ofString(REGISTRATION), "Authorization",
				"Bearer " + TOKEN);
		assertThat(put.statusCode()).isEqualTo(200);
		assertThat(http.send("PUT", "/route", BodyPublishers.ofString(REGISTRATION), "Authorization",
				"bearer " + TOKEN).statusCode()).isEqualTo(200);
		assertThat(server.registeredCount()).isEqualTo(1);
		assertThat(http.get("/route?engine_rank=0&target_dp_group=0&target_pp_rank=0").statusCode()).isEqualTo(200);
		assertThat(http.get("/health").statusCode()).isEqualTo(200);

		assertThat(http.post("/register_dp_rank", "{\"bootstrap_room\": 1, \"dp_rank\": 0}").statusCode())
				.isEqualTo(401);
		assertThat(http.send("POST", "/register_dp_rank", BodyPublishers.ofString("{\"bootstrap_room\": 1, "
				+ "\"dp_rank\": 0}"), "Authorization", "Bearer " + TOKEN).statusCode()).isEqualTo(200);
		assertThat(http.post("/query_dp_ranks", "{\"bootstrap_rooms\": [1]}").body()).isEqualTo("{\"1\": 0}");
	}

	@Test
	void rejectsABlankToken() {
		assertThatThrownBy(() -> BootstrapServer.create().authToken(" ")).hasMessageStartingWith("authToken : ");
		assertThat(BootstrapServer.create().authToken(TOKEN).requiresAuthToken()).isTrue();
		assertThat(BootstrapServer.create().authToken(TOKEN).toString()).doesNotContain(TOKEN);
		assertThat(BootstrapServer.create().requiresAuthToken()).isFalse();
	}
}
