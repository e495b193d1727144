package io.kvferry.bootstrap.server;

import java.io.IOException;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.netty.DisposableServer;
import reactor.netty.http.server.HttpServer;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The encoder role, as SGLang's encoder bootstrap server serves it: encoders register and unregister their URL as
 * its {@code requests} calls do, prefill lists them; a missing URL is answered with SGLang's JSON error; the same
 * answers come from the routes mounted on an engine's own server.
 */
class EncoderBootstrapTest {

	private DisposableBootstrapServer server;

	@BeforeEach
	void start() {
		server = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
	}

	@AfterEach
	void stop() {
		server.disposeNow();
	}

	@Test
	void encodersRegisterAndUnregisterAndPrefillListsThem() throws IOException {
		try (PythonRequests requests = PythonRequests.fresh(server.address())) {
			assertThat(requests.get("/list_encoder_urls")).isEqualTo(json(200, "{\"encoder_urls\":[]}"));
			assertThat(requests.post("/register_encoder_url", "{\"url\": \"http://10.0.0.7:30000\"}"))
					.isEqualTo(text(200, "OK"));
			assertThat(requests.post("/register_encoder_url", "{\"url\": \"http://10.0.0.8:30000\"}"))
					.isEqualTo(text(200, "OK"));
			assertThat(requests.post("/register_encoder_url", "{\"url\": \"http://10.0.0.7:30000\"}"))
					.as("a repeated registration changes nothing").isEqualTo(text(200, "OK"));
			assertThat(requests.get("/list_encoder_urls")).isEqualTo(json(200,
					"{\"encoder_urls\":[\"http://10.0.0.7:30000\",\"http://10.0.0.8:30000\"]}"));

			assertThat(requests.delete("/unregister_encoder_url", "{\"url\": \"http://10.0.0.7:30000\"}"))
					.isEqualTo(text(200, "OK"));
			assertThat(requests.delete("/unregister_encoder_url", "{\"url\": \"http://10.0.0.9:1\"}"))
					.as("unknown: still OK, as SGLang answers").isEqualTo(text(200, "OK"));
			assertThat(requests.get("/list_encoder_urls"))
					.isEqualTo(json(200, "{\"encoder_urls\":[\"http://10.0.0.8:30000\"]}"));
		}
	}

	@Test
	void badRegistrationsAreRefusedNamingTheProblem() throws IOException {
		try (PythonRequests requests = PythonRequests.fresh(server.address())) {
			String missing = "{\"error\":\"Missing or empty 'url' field\"}";
			assertThat(requests.post("/register_encoder_url", "{}")).isEqualTo(json(400, missing));
			assertThat(requests.post("/register_encoder_url", "{\"url\": \"\"}")).isEqualTo(json(400, missing));
			assertThat(requests.post("/register_encoder_url", "{\"url\": 7}")).isEqualTo(json(400, missing));
			assertThat(requests.delete("/unregister_encoder_url", "{}")).isEqualTo(json(400, missing));
			PythonRequests.Answer notHttp = requests.post("/register_encoder_url", "{\"url\": \"file:///etc/passwd\"}");
			assertThat(notHttp.status()).isEqualTo(400);
			assertThat(notHttp.body()).isEqualTo("url : 'file:///etc/passwd' (expected: an http:// or https:// URL of "
					+ "at most 2048 characters)");
			assertThat(requests.post("/register_encoder_url", "[1]").status()).isEqualTo(400);
			assertThat(requests.get("/register_encoder_url").status()).isEqualTo(405);
			assertThat(requests.post("/list_encoder_urls", "{}").status()).isEqualTo(405);
			assertThat(requests.get("/list_encoder_urls")).isEqualTo(json(200, "{\"encoder_urls\":[]}"));
		}
	}

	@Test
	void theMountedRoutesServeTheEncoderRoleToo() throws IOException {
		DisposableBootstrapRoutes routes = BootstrapRoutes.create().start();
		DisposableServer engine = HttpServer.create().host("127.0.0.1").port(0).route(routes).bindNow();
		try (PythonRequests requests = PythonRequests.fresh(new io.kvferry.HostPort("127.0.0.1", engine.port()))) {
			assertThat(requests.post("/register_encoder_url", "{\"url\": \"http://10.0.0.7:30000\"}"))
					.isEqualTo(text(200, "OK"));
			assertThat(requests.get("/list_encoder_urls"))
					.isEqualTo(json(200, "{\"encoder_urls\":[\"http://10.0.0.7:30000\"]}"));
		}
		finally {
			engine.disposeNow();
			routes.dispose();
		}
	}

	private static PythonRequests.Answer json(int status, String body) {
		return new PythonRequests.Answer(status, "application/json; charset=utf-8", body);
	}

	private static PythonRequests.Answer text(int status, String body) {
		return new PythonRequests.Answer(status, "text/plain; charset=utf-8", body);
	}
}
