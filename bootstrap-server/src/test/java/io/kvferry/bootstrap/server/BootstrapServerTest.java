package io.kvferry.bootstrap.server;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.netty.ChannelBindException;
import reactor.test.StepVerifier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The embeddable API: immutable configuration, lazy {@code bind()}, {@code onDispose()}, {@code disposeNow()}. */
class BootstrapServerTest {

	private static final Duration VERIFY = Duration.ofSeconds(20);

	private final List<DisposableBootstrapServer> servers = new ArrayList<>();

	@AfterEach
	void disposeAll() {
		servers.forEach(DisposableBootstrapServer::disposeNow);
	}

	@Test
	void createsTheDefaultsOfSglang() {
		BootstrapServer server = BootstrapServer.create();
		assertThat(server.host()).isEqualTo("0.0.0.0");
		assertThat(server.port()).isEqualTo(8998);
		assertThat(server.maxBodyBytes()).isEqualTo(64 * 1024);
		assertThat(server.idleTimeout()).isEqualTo(BootstrapServer.DEFAULT_IDLE_TIMEOUT);
		assertThat(server.dpRankEntryLifetime()).isEqualTo(Duration.ofSeconds(120));
	}

	@Test
	void everySetterReturnsANewConfigurationAndLeavesTheOriginalUnchanged() {
		BootstrapServer original = BootstrapServer.create();
		BootstrapServer changed = original.host("[::1]").port(0).maxBodyBytes(10).idleTimeout(Duration.ofSeconds(5))
				.dpRankEntryLifetime(Duration.ofSeconds(7)).maxDpRankEntries(9).maxConnections(11)
				.maxLingeringRefusals(0);
		assertThat(changed).isNotSameAs(original);
		assertThat(original.maxDpRankEntries()).isEqualTo(BootstrapServer.DEFAULT_MAX_DP_RANK_ENTRIES);
		assertThat(original.maxLingeringRefusals()).isEqualTo(BootstrapServer.DEFAULT_MAX_LINGERING_REFUSALS);
		assertThat(original.host()).isEqualTo("0.0.0.0");
		assertThat(original.port()).isEqualTo(8998);
		assertThat(original.maxBodyBytes()).isEqualTo(64 * 1024);
		assertThat(changed.host()).isEqualTo("::1");
		assertThat(changed.port()).isZero();
		assertThat(changed.maxBodyBytes()).isEqualTo(10);
		assertThat(changed.idleTimeout()).isEqualTo(Duration.ofSeconds(5));
		assertThat(changed.dpRankEntryLifetime()).isEqualTo(Duration.ofSeconds(7));
		assertThat(changed.maxDpRankEntries()).isEqualTo(9);
		assertThat(changed.maxConnections()).isEqualTo(11);
		assertThat(changed.maxLingeringRefusals()).isZero();
		assertThat(changed.toString()).contains("[::1]:0", "maxDpRankEntries=9", "maxConnections=11",
				"maxLingeringRefusals=0");
	}

	@Test
	void rejectsBadSettingsNamingThem() {
		BootstrapServer server = BootstrapServer.create();
		assertThatThrownBy(() -> server.host(null)).isInstanceOf(NullPointerException.class).hasMessage("host");
		assertThatThrownBy(() -> server.host(" ")).isInstanceOf(IllegalArgumentException.class)
				.hasMessageStartingWith("host : ");
		assertThatThrownBy(() -> server.port(-1)).hasMessage("port : -1 (expected: 0..65535)");
		assertThatThrownBy(() -> server.port(65536)).hasMessage("port : 65536 (expected: 0..65535)");
		assertThatThrownBy(() -> server.maxBodyBytes(0)).hasMessage("maxBodyBytes : 0 (expected: > 0)");
		assertThatThrownBy(() -> server.maxLingeringRefusals(-1))
				.hasMessage("maxLingeringRefusals : -1 (expected: >= 0)");
		assertThatThrownBy(() -> server.idleTimeout(Duration.ZERO)).hasMessageStartingWith("idleTimeout : ");
		assertThatThrownBy(() -> server.dpRankEntryLifetime(Duration.ofSeconds(-1)))
				.hasMessageStartingWith("dpRankEntryLifetime : ");
		assertThatThrownBy(() -> server.bindNow(Duration.ZERO)).hasMessageStartingWith("timeout : ");
	}

	@Test
	void bindEmitsARunningServerWithTheRealPort() {
		StepVerifier.create(BootstrapServer.create().host("127.0.0.1").port(0).bind())
				.assertNext(server -> {
					servers.add(server);
					assertThat(server.address().host()).isEqualTo("127.0.0.1");
					assertThat(server.address().port()).isPositive();
					assertThat(server.registeredCount()).isZero();
					assertThat(server.isDisposed()).isFalse();
				})
				.expectComplete()
				.verify(VERIFY);
		// Not inside assertNext: that runs on the event loop, where the blocking JDK client is refused.
		assertThat(new TestHttp(servers.get(0).address()).get("/health").body()).isEqualTo("OK");
	}

	@Test
	void bindIsLazyAndEachSubscriptionBindsAnotherServerWithItsOwnTable() {
		Mono<DisposableBootstrapServer> bind = BootstrapServer.create().host("127.0.0.1").port(0).bind();
		DisposableBootstrapServer first = bind.block(VERIFY);
		DisposableBootstrapServer second = bind.block(VERIFY);
		servers.add(first);
		servers.add(second);
		assertThat(first.address().port()).isNotEqualTo(second.address().port());
		new TestHttp(first.address()).put("/route", TestHttp.registration(1, 0, 1, 0, 1, 0, "10.0.0.1", 5000));
		assertThat(first.registeredCount()).isEqualTo(1);
		assertThat(second.registeredCount()).isZero();
	}

	@Test
	void bindFailsWithChannelBindExceptionWhenThePortIsTaken() throws IOException {
		try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
			StepVerifier.create(BootstrapServer.create().host("127.0.0.1").port(taken.getLocalPort()).bind())
					.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(ChannelBindException.class)
							.hasMessageContaining(Integer.toString(taken.getLocalPort())))
					.verify(VERIFY);
			assertThatThrownBy(() -> BootstrapServer.create().host("127.0.0.1").port(taken.getLocalPort()).bindNow())
					.isInstanceOf(ChannelBindException.class);
		}
	}

	@Test
	void onDisposeCompletesWhenTheServerIsDisposed() {
		DisposableBootstrapServer server = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		StepVerifier.create(server.onDispose())
				.expectSubscription()
				.then(server::dispose)
				.expectComplete()
				.verify(VERIFY);
		assertThat(server.isDisposed()).isTrue();
		// A late subscriber sees the completion too.
		StepVerifier.create(server.onDispose()).expectComplete().verify(VERIFY);
	}

	@Test
	void disposeNowStopsServingAndIsIdempotent() {
		DisposableBootstrapServer server = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		TestHttp kept = new TestHttp(server.address());
		assertThat(kept.get("/health").statusCode()).isEqualTo(200);
		server.disposeNow();
		server.disposeNow();
		server.dispose();
		assertThat(server.isDisposed()).isTrue();
		TestHttp fresh = new TestHttp(server.address());
		assertThatThrownBy(() -> fresh.get("/health")).isInstanceOf(UncheckedIOException.class);
		// The kept-alive connection of the earlier client was closed too.
		assertThatThrownBy(() -> kept.get("/health")).isInstanceOf(UncheckedIOException.class);
	}
}
