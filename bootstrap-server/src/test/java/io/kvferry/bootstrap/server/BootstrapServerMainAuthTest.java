package io.kvferry.bootstrap.server;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.kvferry.bootstrap.server.BootstrapServerMain.Configured;
import io.kvferry.bootstrap.server.PythonRequests.Answer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The standalone server's choice about the bearer token: required when one is set (stock SGLang ranks, which send
 * none, then get 401), accepted without one on {@code --no-require-auth-token}, refused to start on
 * {@code --require-auth-token} without a token; one start-up line says which.
 */
class BootstrapServerMainAuthTest {

	/** A registration as a stock SGLang rank sends it: no Authorization header. */
	private static final String SGLANG_REGISTRATION = "{\"attn_tp_size\": 1, \"attn_tp_rank\": 0, "
			+ "\"attn_cp_size\": 1, \"attn_cp_rank\": 0, \"attn_dp_size\": 1, \"attn_dp_rank\": 0, \"pp_size\": 1, "
			+ "\"pp_rank\": 0, \"system_dp_size\": 1, \"system_dp_rank\": 0, \"rank_ip\": \"10.0.0.1\", "
			+ "\"rank_port\": 5000, \"page_size\": 64, \"kv_cache_dtype\": \"auto\", "
			+ "\"load_balance_method\": \"follow_bootstrap_room\", \"enable_dsa_cache_layer_split\": false, "
			+ "\"prefill_http_port\": 30000}";

	private final ListAppender<ILoggingEvent> log = new ListAppender<>();
	private final Logger logger = (Logger) LoggerFactory.getLogger(BootstrapServerMain.class);
	private DisposableBootstrapServer server;

	@BeforeEach
	void listen() {
		log.start();
		logger.addAppender(log);
	}

	@AfterEach
	void stop() {
		logger.detachAppender(log);
		if (server != null) {
			server.disposeNow();
		}
	}

	@Test
	void aTokenIsRequiredWhenSetAndStockSglangRegistrationsGet401() throws IOException {
		Answer answer = registerLikeSglang("--auth-token", "t0ken");
		assertThat(answer.status()).isEqualTo(401);
		assertThat(answer.body()).isEqualTo("Authorization : missing (expected: Bearer <token>)");
		assertThat(startupLines()).containsExactly("INFO Writes (PUT /route, POST /register_dp_rank) require the "
				+ "bearer token; stock SGLang ranks send none and get 401 (--no-require-auth-token accepts them)");
	}

	@Test
	void anExplicitRequireBehavesTheSame() throws IOException {
		assertThat(registerLikeSglang("--auth-token", "t0ken", "--require-auth-token").status()).isEqualTo(401);
		assertThat(startupLines()).singleElement().asString().startsWith("INFO Writes (PUT /route, "
				+ "POST /register_dp_rank) require the bearer token");
	}

	@Test
	void noRequireAcceptsStockSglangRegistrationsAndSaysTheTokenIsIgnored() throws IOException {
		Answer answer = registerLikeSglang("--auth-token", "t0ken", "--no-require-auth-token");
		assertThat(answer.status()).isEqualTo(200);
		assertThat(answer.body()).isEqualTo("OK");
		assertThat(startupLines()).containsExactly("WARN Writes (PUT /route, POST /register_dp_rank) need no token "
				+ "(--no-require-auth-token): the token set is ignored, as stock SGLang ranks send none; anyone who "
				+ "reaches this port can register ranks");
	}

	@Test
	void withoutATokenWritesAreOpenAndTheLineSaysHowToCloseThem() throws IOException {
		assertThat(registerLikeSglang().status()).isEqualTo(200);
		assertThat(startupLines()).containsExactly("INFO Writes (PUT /route, POST /register_dp_rank) need no token, "
				+ "as stock SGLang ranks send none; anyone who reaches this port can register ranks (--auth-token or "
				+ "$SGLANG_DISAGGREGATION_BOOTSTRAP_AUTH_TOKEN requires one)");
	}

	@Test
	void requireWithoutATokenRefusesToStart() {
		StringWriter err = new StringWriter();
		assertThat(BootstrapServerMain.execute(new PrintWriter(new StringWriter()), new PrintWriter(err, true),
				"--require-auth-token", "--port", "0")).isEqualTo(BootstrapServerMain.EXIT_USAGE);
		assertThat(err.toString()).contains("--require-auth-token : no token (expected: --auth-token or "
				+ "$SGLANG_DISAGGREGATION_BOOTSTRAP_AUTH_TOKEN)");
	}

	/** Binds the server a command line describes and sends it a stock SGLang registration. */
	private Answer registerLikeSglang(String... options) throws IOException {
		String[] args = new String[options.length + 5];
		System.arraycopy(new String[] { "--host", "127.0.0.1", "--port", "0", "--no-metrics" }, 0, args, 0, 5);
		System.arraycopy(options, 0, args, 5, options.length);
		Configured configured = BootstrapServerMain.configuration(args);
		server = configured.server().bindNow();
		try (PythonRequests requests = PythonRequests.fresh(server.address())) {
			return requests.put("/route", SGLANG_REGISTRATION);
		}
	}

	private List<String> startupLines() {
		return log.list.stream()
				.filter(event -> event.getFormattedMessage().startsWith("Writes "))
				.map(event -> event.getLevel() + " " + event.getFormattedMessage())
				.toList();
	}
}
