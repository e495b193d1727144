package io.kvferry.examples.snippets;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import io.kvferry.FailureCause;
import io.kvferry.KVPoll;
import io.kvferry.KVStatusEvent;
import io.kvferry.TensorArena.Tensor;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.pkitesting.CertificateBuilder;
import io.netty.pkitesting.X509Bundle;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Runs every example end to end (real sockets on 127.0.0.1, the real bootstrap server) and checks what it reports.
 * Each example stops everything it started before returning, so a test that ends has left nothing running.
 */
@Timeout(60)
class ExamplesTest {

	@Test
	void firstRoomMovesFourPagesAndTheAuxRowIntact() {
		assertThat(FirstRoom.run()).isTrue();
	}

	@ParameterizedTest(name = "shared memory {0}")
	@ValueSource(booleans = { false, true })
	void encoderToPrefillMovesNamedTensorsIntactAndTouchesNothingElse(boolean sharedMemory) {
		EncoderToPrefill.Received r = EncoderToPrefill.run(sharedMemory, EncoderToPrefill.embeddings());

		assertThat(r.intact()).isTrue();
		assertThat(r.manifestMatches()).isTrue();
		assertThat(r.outsideUntouched()).isTrue();
		assertThat(r.sharedMemory()).isEqualTo(sharedMemory);
	}

	@Test
	void aReceiverExpectingOtherTensorSizesSeesTheManifestDiffer() {
		// Same chunk count, another size: every byte lands, but the manifest says the tensors differ: the room fails.
		List<Tensor> other = new ArrayList<>(EncoderToPrefill.embeddings());
		Tensor first = other.get(0);
		other.set(0, new Tensor(first.name(), first.bytes() - 1));

		EncoderToPrefill.Received r = EncoderToPrefill.run(false, other);

		assertThat(r.manifestMatches()).isFalse();
		assertThat(r.outsideUntouched()).isTrue();
	}

	@Test
	void secondTurnPullsTheFirstTurnsKVBackFromDecode() {
		SecondTurn.Turns t = SecondTurn.run();

		assertThat(t.firstTurnIntact()).isTrue();
		assertThat(t.backOnA()).isTrue();
	}

	@Test
	void watchStatesSeesEveryStateOnceInOrderAndTheEventsChainThem() {
		WatchStates.Watched w = WatchStates.run();

		assertThat(w.receiverStates()).first().isEqualTo(KVPoll.BOOTSTRAPPING);
		assertThat(w.receiverStates()).last().isEqualTo(KVPoll.SUCCESS);
		assertThat(w.receiverStates()).isSortedAccordingTo((a, b) -> Integer.compare(a.code(), b.code()))
				.doesNotHaveDuplicates();
		assertThat(w.senderStates()).last().isEqualTo(KVPoll.SUCCESS);
		assertThat(w.senderStates()).doesNotHaveDuplicates();

		List<KVStatusEvent> events = w.decodeEvents();
		assertThat(events).isNotEmpty().allSatisfy(e -> assertThat(e.room()).isEqualTo(7));
		assertThat(events.get(0).previous()).isNull();
		assertThat(events.get(events.size() - 1).current()).isEqualTo(KVPoll.SUCCESS);
		for (int i = 1; i < events.size(); i++) {
			assertThat(events.get(i).previous()).isEqualTo(events.get(i - 1).current());
		}
	}

	@Test
	void chunkedSendsSucceedOnlyWithTheLastChunk() {
		ChunkedSends.Chunked c = ChunkedSends.run();

		assertThat(c.afterFirstChunk()).isNotIn(KVPoll.SUCCESS, KVPoll.FAILED);
		assertThat(c.intact()).isTrue();
	}

	@Test
	void layerwiseSendsLandEveryLayerOnce() {
		LayerwiseSends.Layerwise l = LayerwiseSends.run();

		assertThat(l.landed()).containsExactly(0);
		assertThat(l.intact()).isTrue();
	}

	@Test
	void abortFromDecodeFailsBothSidesWithDecodesReason() {
		AbortFromDecode.Aborted a = AbortFromDecode.run();

		assertThat(a.decodeFailure().failureCause()).isEqualTo(FailureCause.ABORTED);
		assertThat(a.decodeFailure().room()).isEqualTo(11);
		assertThat(a.prefillFailure().failureCause()).isEqualTo(FailureCause.ABORTED);
		assertThat(a.prefillFailure().reason()).contains("request cancelled by the client");
		assertThat(a.prefillState()).isEqualTo(KVPoll.FAILED);
	}

	@Test
	void aFailedRoomNamesThePagesThatLandedAndTheEngineRecomputesTheRest() {
		RecomputeMissing.Recovered r = RecomputeMissing.run();

		assertThat(r.landed()).containsExactly(20, 21);
		assertThat(r.recomputed()).containsExactly(22, 23);
	}

	@Test
	void roomMetricsCountEveryByteAndPageOfTheRoom() {
		RoomMetrics.Measured m = RoomMetrics.run();

		assertThat(m.bytesReceived()).isEqualTo(Cache.roomBytes(4));
		assertThat(m.bytesSent()).isEqualTo(Cache.roomBytes(4));
		assertThat(m.pagesSent()).isEqualTo(4);
	}

	@Test
	void tlsAndSecretMoveTheRoomIntact() throws Exception {
		X509Bundle node = selfSigned();
		SslContext server = SslContextBuilder.forServer(node.toKeyManagerFactory()).build();
		SslContext client = SslContextBuilder.forClient().trustManager(node.toTrustManagerFactory()).build();
		byte[] secret = "a secret of at least 32 bytes, for the example".getBytes(StandardCharsets.UTF_8);

		assertThat(TlsAndSecret.run(server, client, secret)).isTrue();
	}

	@Test
	void embeddedBootstrapResolvesEachRankToWhereItListens() {
		EmbeddedBootstrap.Registry r = EmbeddedBootstrap.run();

		assertThat(r.registered()).isEqualTo(2);
		assertThat(r.info().attnTpSize()).isEqualTo(2);
		assertThat(r.info().dpSize()).isEqualTo(1);
		assertThat(r.info().ppSize()).isEqualTo(1);
		assertThat(r.rank1()).isEqualTo(r.rank1Listens());
	}

	@Test
	void mountedBootstrapResolvesEachRankFromTheEnginesApiServer() {
		MountedBootstrap.Registry r = MountedBootstrap.run();

		assertThat(r.registered()).isEqualTo(2);
		assertThat(r.info().attnTpSize()).isEqualTo(2);
		assertThat(r.rank1()).isEqualTo(r.rank1Listens());
	}

	/** @return a self-signed certificate for 127.0.0.1 (EC P-256), as the transport's TLS tests make theirs */
	static X509Bundle selfSigned() throws Exception {
		return new CertificateBuilder()
				.subject("CN=kvferry-example")
				.setIsCertificateAuthority(true)
				.addSanIpAddress("127.0.0.1")
				.ecp256()
				.buildSelfSigned();
	}
}
