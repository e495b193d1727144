package io.kvferry.cli;

import java.time.Duration;
import java.util.List;
import java.util.function.UnaryOperator;

import io.kvferry.KVManagerSpec;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RoomResult;
import io.kvferry.transport.netty.NettyKVTransport;
import io.kvferry.transport.netty.SameHost;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.api.Timeout;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Prefill drains mid-batch and goes away as the prefill command does (drain, close, dispose its transport) while a
 * decode batch keeps asking for rooms, each role on a transport of its own as two processes have: every room decode
 * loses carries the draining rank's reason, over TCP and through the same-host rings alike.
 */
@Timeout(120)
class SameHostDrainTest {

	private static final Duration TIMEOUT = Duration.ofSeconds(30);
	private static final ModelShape SHAPE = new ModelShape(2, 2, 64, 2, 16, false, 0, 64, 0);
	private static final UnaryOperator<KVManagerSpec<?, ?>> TIMEOUTS = s -> s.bootstrapTimeout(TIMEOUT)
			.waitingTimeout(TIMEOUT).transferTimeout(TIMEOUT);

	@ParameterizedTest
	@EnumSource(SameHost.class)
	void everyRoomDecodeLosesToADrainingPrefillSaysItDrained(SameHost mode) {
		for (int round = 0; round < 5; round++) {
			drainMidBatch(mode, round);
		}
	}

	private void drainMidBatch(SameHost mode, int round) {
		DisposableBootstrapServer server = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		NettyKVTransport prefillTransport = NettyKVTransport.create().sameHost(mode);
		NettyKVTransport decodeTransport = NettyKVTransport.create().sameHost(mode);
		ReactorBootstrapClient prefillClient = ReactorBootstrapClient.create();
		ReactorBootstrapClient decodeClient = ReactorBootstrapClient.create();
		DecodeClient decode = null;
		try {
			// A pool of one room's pages: prefill serves rooms one by one, decode always has rooms waiting.
			PrefillEngine prefill = PrefillEngine.start(new PrefillEngine.Config(SHAPE, 1, 1, 1, 1, false, 32, 33, 4096,
					"127.0.0.1", null, server.address(), prefillTransport, prefillClient, TIMEOUTS)).block(TIMEOUT);
			Workload batch = Workload.generate(2000, 16, 512, SHAPE.pageSize(), round, round);
			decode = DecodeClient.start(SHAPE, 1, 1, 4096, 2001, decodeTransport, decodeClient, TIMEOUTS)
					.block(TIMEOUT);
			DecodeClient d = decode;
			BatchRunner runner = new BatchRunner(batch.requests(), 4, 4096, true,
					r -> d.run(server.address(), r.room(), r.tokens()), r -> { });
			Mono<BatchRunner.Outcome> outcome = runner.run().cache();
			outcome.subscribe();
			StepVerifier.create(Mono.fromSupplier(prefill::served).filter(n -> n >= 3)
					.repeatWhenEmpty(tries -> tries.delayElements(Duration.ofMillis(5))))
					.expectNextCount(1).expectComplete().verify(TIMEOUT);
			// What the prefill command does on SIGTERM.
			prefill.drain(Duration.ofSeconds(20)).block(TIMEOUT);
			prefill.close().block(TIMEOUT);
			prefillTransport.dispose();
			BatchRunner.Outcome o = outcome.block(TIMEOUT);
			List<RoomResult> failed = o.results().stream().filter(r -> !r.ok()).toList();
			System.out.printf("drain %s round %d: %d rooms, %d failed, %d skipped%n", mode, round, o.results().size(),
					failed.size(), o.skipped());
			assertThat(failed).as("round %d", round).allSatisfy(r -> assertThat(r.failure())
					.containsPattern("is draining and admits no new rooms|was draining and room \\d+ did not end"));
		}
		finally {
			if (decode != null) {
				decode.close().block(TIMEOUT);
			}
			prefillTransport.dispose();
			decodeTransport.dispose();
			prefillClient.dispose();
			decodeClient.dispose();
			server.disposeNow();
		}
	}
}
