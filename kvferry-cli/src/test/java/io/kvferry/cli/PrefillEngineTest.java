package io.kvferry.cli;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.function.LongSupplier;
import java.util.function.UnaryOperator;

import io.kvferry.KVManagerSpec;
import io.kvferry.RoomRequest;
import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RoomResult;
import io.kvferry.transport.netty.NettyKVTransport;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

import static org.assertj.core.api.Assertions.assertThat;

/** The prefill engine and the decode client in one JVM over loopback TCP, as the separate roles run them. */
@Timeout(60)
class PrefillEngineTest {

	private static final Duration TIMEOUT = Duration.ofSeconds(30);
	private static final ModelShape SHAPE = new ModelShape(4, 4, 16, 2, 4, false, 0, 64, 0);
	private static final UnaryOperator<KVManagerSpec<?, ?>> TIMEOUTS = s -> s.bootstrapTimeout(TIMEOUT)
			.waitingTimeout(TIMEOUT).transferTimeout(TIMEOUT);

	private DisposableBootstrapServer server;
	private NettyKVTransport transport;
	private ReactorBootstrapClient client;
	private PrefillEngine prefill;
	private DecodeClient decode;

	@BeforeEach
	void network() {
		server = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		transport = NettyKVTransport.create();
		client = ReactorBootstrapClient.create();
	}

	@AfterEach
	void close() {
		if (decode != null) {
			decode.close().block(TIMEOUT);
		}
		if (prefill != null) {
			prefill.close().block(TIMEOUT);
		}
		transport.dispose();
		client.dispose();
		server.disposeNow();
	}

	private void start(int tp, int pp, int dp, int prefillPages, int decodeTp, int decodePages) {
		prefill = PrefillEngine.start(new PrefillEngine.Config(SHAPE, tp, pp, dp, 1, false, prefillPages, prefillPages + 1, 16,
				"127.0.0.1", null, server.address(), transport, client, TIMEOUTS)).block(TIMEOUT);
		decode = DecodeClient.start(SHAPE, decodeTp, 1, decodePages, 64, transport, client, TIMEOUTS).block(TIMEOUT);
	}

	private List<RoomResult> run(int tokens, long... rooms) {
		return Flux.fromStream(Arrays.stream(rooms).boxed())
				.flatMap(room -> decode.run(server.address(), room, tokens))
				.collectList()
				.block(TIMEOUT);
	}

	/** Prefill counts a room once its own completion arrived, which may trail decode's by a moment. */
	private static void awaitCount(LongSupplier counter, long expected) {
		StepVerifier.create(Mono.fromSupplier(counter::getAsLong).filter(n -> n >= expected)
						.repeatWhenEmpty(tries -> tries.delayElements(Duration.ofMillis(20))))
				.expectNext(expected)
				.expectComplete()
				.verify(TIMEOUT);
	}

	@Test
	void servesEveryRankOfEachDpGroupFromOnePageTableAndDecodeVerifiesEveryByte() {
		start(2, 2, 2, 64, 1, 256);
		assertThat(prefill.managers()).hasSize(8);
		List<RoomResult> results = run(50, 1, 2, 3, 4, 5, 6);
		assertThat(results).hasSize(6).allSatisfy(r -> assertThat(r.failure()).isNull());
		// 13 pages of 4 tokens x 4 heads x 16 bf16 = 512 B per layer buffer, 8 buffers, on one decode rank.
		assertThat(results).allSatisfy(r -> assertThat(r.bytes()).isEqualTo(13L * 512 * 8));
		awaitCount(prefill::served, 6);
		assertThat(prefill.failed()).isZero();
	}

	@ParameterizedTest
	@ValueSource(ints = { 16, 1 })
	void prefillPagesLargerOrSmallerThanDecodesHoldTheRoomsTokens(int prefillPageSize) {
		// Decode pages of 4 tokens: prefill sizes each room by its own page size.
		prefill = PrefillEngine.start(new PrefillEngine.Config(SHAPE.withPageSize(prefillPageSize), 1, 1, 1, 1, false,
				256, 257, 16, "127.0.0.1", null, server.address(), transport, client, TIMEOUTS)).block(TIMEOUT);
		decode = DecodeClient.start(SHAPE, 1, 1, 256, 64, transport, client, TIMEOUTS).block(TIMEOUT);
		// 50 tokens: 13 decode pages, 4 (or 52) prefill pages.
		assertThat(run(50, 81, 82)).hasSize(2).allSatisfy(r -> assertThat(r.failure()).isNull());
		awaitCount(prefill::served, 2);
	}

	@Test
	void contextParallelRanksADecodePrefixAndMambaStateAcrossTpSizesAreServedByteExact() {
		ModelShape hybrid = SHAPE.withMamba(8, 16);
		prefill = PrefillEngine.start(new PrefillEngine.Config(hybrid, 2, 1, 1, 2, true, 64, 65, 16, "127.0.0.1", null,
				server.address(), transport, client, TIMEOUTS)).block(TIMEOUT);
		assertThat(prefill.managers()).hasSize(4);
		decode = DecodeClient.start(hybrid, 1, 1, 256, 64, transport, client, TIMEOUTS).block(TIMEOUT)
				.decodePrefix(0.5);
		// 13 pages, decode holds 6: each room moves 7 pages, and its Mamba slot from both prefill TP ranks.
		List<RoomResult> results = run(50, 31, 32, 33);
		assertThat(results).hasSize(3).allSatisfy(r -> assertThat(r.failure()).isNull());
		assertThat(results).allSatisfy(r -> assertThat(r.bytes()).isEqualTo(7L * 512 * 8));
		awaitCount(prefill::served, 3);
	}

	@Test
	void layerByLayerComputeSendsEachStagesLayersAsTheyAreDone() {
		prefill = PrefillEngine.start(new PrefillEngine.Config(SHAPE, 2, 2, 1, 1, false, 64, 65, 16, "127.0.0.1", null,
				server.address(), transport, client, TIMEOUTS, Duration.ofMillis(1), true)).block(TIMEOUT);
		decode = DecodeClient.start(SHAPE, 1, 1, 256, 64, transport, client, TIMEOUTS).block(TIMEOUT);
		// 13 pages in chunks of 4: three layer-wise chunks and a last one, on both PP stages of both TP ranks.
		List<RoomResult> results = run(50, 41, 42);
		assertThat(results).hasSize(2).allSatisfy(r -> assertThat(r.failure()).isNull());
		awaitCount(prefill::served, 2);
	}

	@Test
	void aRanksRequestArrivingAfterItsRoomEndedIsNotServedAgain() {
		start(1, 1, 1, 64, 1, 256);
		assertThat(run(50, 61)).singleElement().satisfies(r -> assertThat(r.failure()).isNull());
		awaitCount(prefill::served, 1);
		// A slow rank's copy of decode's request for the room, heard after the room ended.
		prefill.offer(0, new RoomRequest(61, 13, 0, false));
		// The group's worker takes requests in order: the copy is handled before the next room is served.
		assertThat(run(50, 62)).singleElement().satisfies(r -> assertThat(r.failure()).isNull());
		awaitCount(prefill::served, 2);
		assertThat(prefill.failed()).isZero();
	}

	@Test
	void decodeStartsNoRoomOnceItClosedAdmissionAndTheManagersStillServeThoseStartedBefore() {
		start(1, 1, 1, 64, 1, 256);
		// Started before admission closes: it runs to the end.
		Mono<RoomResult> before = decode.run(server.address(), 71, 50).cache();
		before.subscribe();
		StepVerifier.create(decode.closeAdmission()).expectComplete().verify(TIMEOUT);
		StepVerifier.create(decode.run(server.address(), 72, 50)).expectComplete().verify(TIMEOUT);
		StepVerifier.create(before).assertNext(r -> assertThat(r.failure()).isNull()).expectComplete().verify(TIMEOUT);
		awaitCount(prefill::served, 1);
	}

	@Test
	void roomsThatDoNotFitThePoolWaitTheirTurn() {
		// Room for one 13-page room at a time on prefill: the others queue in arrival order.
		start(1, 1, 1, 16, 2, 256);
		List<RoomResult> results = run(50, 11, 12, 13, 14);
		assertThat(results).hasSize(4).allMatch(RoomResult::ok);
		awaitCount(prefill::served, 4);
	}

	@Test
	void aRoomLargerThanThePoolFailsOnDecodeWithTheReason() {
		start(1, 1, 1, 8, 1, 256);
		StepVerifier.create(decode.run(server.address(), 21, 50))
				.assertNext(r -> assertThat(r.failure()).contains("needs 13 pages").contains("--pool-tokens"))
				.expectComplete()
				.verify(TIMEOUT);
		awaitCount(prefill::failed, 1);
		// The pool is intact: a room that fits still runs.
		assertThat(run(20, 22)).singleElement().satisfies(r -> assertThat(r.failure()).isNull());
	}
}
