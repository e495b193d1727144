package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;

import io.kvferry.DecodeKVManager;
import io.kvferry.DecodeSpec;
import io.kvferry.FailureCause;
import io.kvferry.HostPort;
import io.kvferry.KVManager;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.KVStatusEvent;
import io.kvferry.KVTransferException;
import io.kvferry.ParallelLayout;
import io.kvferry.PrefillKVManager;
import io.kvferry.RoomPath;
import io.kvferry.RoomPhases;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.test.InMemoryBootstrap;
import io.kvferry.transport.local.InMemoryKVTransport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

/**
 * In one JVM a room travels in memory, says so on both sides with its phases, and fails when either side requires a
 * path memory is not.
 */
class InMemoryRoomPathTest {

	private static final Duration T = Duration.ofSeconds(10);
	private static final ModelShape SHAPE = new ModelShape(2, 2, 16, 2, 4, false, 0, 64, 0);
	private static final HostPort BOOTSTRAP = new HostPort("127.0.0.1", 8997);

	private final InMemoryBootstrap bootstrap = new InMemoryBootstrap();
	private final InMemoryKVTransport transport = InMemoryKVTransport.create();
	private final RankMemory prefillMem = RankMemory.prefill(SHAPE, ParallelLayout.SINGLE, 64, 8, 8);
	private final RankMemory decodeMem = RankMemory.decode(SHAPE, ParallelLayout.SINGLE, 64, 8, 8);
	private PrefillKVManager prefill;
	private DecodeKVManager decode;

	private void start(RoomPath.Requirement required) {
		start(RoomPath.Requirement.ANY, required);
	}

	private void start(RoomPath.Requirement prefillRequires, RoomPath.Requirement decodeRequires) {
		prefill = KVManagerSpec.prefill().kvArgs(prefillMem.kvArgs()).transport(transport).bootstrapClient(bootstrap)
				.bootstrapAddress(BOOTSTRAP).bindAddress(new HostPort("127.0.0.1", 0)).requirePath(prefillRequires)
				.startNow();
		decode = KVManagerSpec.decode().kvArgs(decodeMem.kvArgs()).transport(transport).bootstrapClient(bootstrap)
				.requirePath(decodeRequires).startNow();
	}

	@AfterEach
	void close() {
		if (prefill != null) {
			prefill.disposeNow(T);
			decode.disposeNow(T);
		}
	}

	@Test
	void aRoomInOneJvmSaysInMemoryOnBothSidesAfterItEndedWithItsPhases() {
		start(RoomPath.Requirement.ANY);
		// Hot: subscribed before the room opens, so that its terminal events are seen.
		Mono<KVStatusEvent> decodeEnd = terminal(decode, 50);
		Mono<KVStatusEvent> prefillEnd = terminal(prefill, 50);
		int[] src = { 0, 1 };
		prefillMem.fill(50, src, -1, new int[0]);
		KVReceiver receiver = decode.receiver(BOOTSTRAP, 50);
		receiver.sendMetadata(new int[] { 8, 9 }, -1, new int[0]);
		KVSender sender = prefill.sender(50);
		sender.init(src.length, -1);
		sender.send(src, new int[0]);
		StepVerifier.create(Mono.when(receiver.completion(), sender.completion())).expectComplete().verify(T);
		RoomPath inMemory = new RoomPath(RoomPath.Kind.IN_MEMORY, DecodeSpec.DEFAULT_STRIPES, false);
		assertThat(receiver.path()).isEqualTo(inMemory);
		assertThat(sender.path()).as("prefill's end of the same connections").isEqualTo(inMemory);
		assertThat(decodeMem.verify(50, new int[] { 8, 9 }, -1, new int[0])).isNull();

		RoomPhases d = receiver.phases();
		assertThat(d.bootstrap()).isPresent();
		assertThat(d.waitingForPeer()).isPresent();
		assertThat(d.wire()).isPresent();
		assertThat(d.landing()).isPresent();
		assertThat(d.waitingForEngine()).as("decode cannot tell prefill's compute from its wait").isEmpty();
		RoomPhases p = sender.phases();
		assertThat(p.bootstrap()).as("prefill dials nobody").isEmpty();
		assertThat(p.waitingForPeer()).isPresent();
		assertThat(p.waitingForEngine()).isPresent();
		assertThat(p.wire()).isPresent();
		assertThat(p.landing()).isEmpty();
		StepVerifier.create(decodeEnd).expectNextMatches(e -> e.current() == KVPoll.SUCCESS && e.phases().equals(d))
				.expectComplete().verify(T);
		StepVerifier.create(prefillEnd).expectNextMatches(e -> e.current() == KVPoll.SUCCESS && e.phases().equals(p))
				.expectComplete().verify(T);
	}

	@Test
	void aPrefillRankThatRequiresTlsFailsARoomAskedInMemoryNamingBothPaths() {
		start(RoomPath.Requirement.TLS, RoomPath.Requirement.ANY);
		int[] src = { 0, 1 };
		prefillMem.fill(52, src, -1, new int[0]);
		KVSender sender = prefill.sender(52);
		sender.init(src.length, -1);
		sender.send(src, new int[0]);
		KVReceiver receiver = decode.receiver(BOOTSTRAP, 52);
		receiver.sendMetadata(new int[] { 8, 9 }, -1, new int[0]);
		StepVerifier.create(sender.completion())
				.expectErrorSatisfies(e -> {
					KVTransferException k = (KVTransferException) e;
					assertThat(k.failureCause()).isEqualTo(FailureCause.INCOMPATIBLE);
					assertThat(k.reason()).contains("requires TLS").contains("decode rank").contains("is in-memory");
				})
				.verify(T);
		assertThat(sender.path()).as("the path it was refused for").isEqualTo(new RoomPath(RoomPath.Kind.IN_MEMORY,
				DecodeSpec.DEFAULT_STRIPES, false));
		StepVerifier.create(receiver.completion())
				.expectErrorSatisfies(e -> assertThat(((KVTransferException) e).reason()).contains("requires TLS"))
				.verify(T);
		assertThat(decodeMem.verify(52, new int[] { 8, 9 }, -1, new int[0])).as("no byte went").isNotNull();
	}

	@Test
	void aRoomRefusedForItsPathBeforeTheEngineClaimedItGetsASenderBornFailed() {
		start(RoomPath.Requirement.SHARED_MEMORY, RoomPath.Requirement.ANY);
		KVReceiver receiver = decode.receiver(BOOTSTRAP, 53);
		receiver.sendMetadata(new int[] { 1 }, -1, new int[0]);
		// Decode hears of the refusal once prefill turned the request away.
		StepVerifier.create(receiver.completion())
				.expectErrorSatisfies(e -> assertThat(((KVTransferException) e).reason())
						.contains("requires shared memory").contains("is in-memory"))
				.verify(T);
		KVSender sender = prefill.sender(53);
		StepVerifier.create(sender.completion())
				.expectErrorSatisfies(e -> {
					KVTransferException k = (KVTransferException) e;
					assertThat(k.failureCause()).isEqualTo(FailureCause.INCOMPATIBLE);
					assertThat(k.isFromAnotherRank()).isFalse();
					assertThat(k.reason()).contains("requires shared memory");
				})
				.verify(T);
	}

	/** @return the room's terminal event, subscribed now (the stream is hot) */
	private static Mono<KVStatusEvent> terminal(KVManager m, long room) {
		Mono<KVStatusEvent> end = m.events().filter(e -> e.room() == room && e.current().isTerminal()).next().cache();
		end.subscribe();
		return end;
	}

	@Test
	void requiringSharedMemoryInMemoryFailsTheRoomNamingBothPaths() {
		start(RoomPath.Requirement.SHARED_MEMORY);
		KVReceiver receiver = decode.receiver(BOOTSTRAP, 51);
		receiver.sendMetadata(new int[] { 1 }, -1, new int[0]);
		StepVerifier.create(receiver.completion())
				.expectErrorSatisfies(e -> {
					KVTransferException k = (KVTransferException) e;
					assertThat(k.failureCause()).isEqualTo(FailureCause.INCOMPATIBLE);
					assertThat(k.reason()).contains("requires shared memory").contains("is in-memory");
					assertThat(k.landedPages().requested()).containsExactly(1);
					assertThat(k.landedPages().missing()).containsExactly(1);
				})
				.verify(T);
		// The path it was refused for, not an unknown one.
		assertThat(receiver.path()).isEqualTo(new RoomPath(RoomPath.Kind.IN_MEMORY, DecodeSpec.DEFAULT_STRIPES, false));
	}

	@Test
	void aConnectionWhoseTransportReportsNoPathIsRefusedSayingSoNotAsAnUnknownPath() {
		String refused = PathCheck.refusal(54, RoomPath.Requirement.TLS, RoomPath.UNKNOWN, "prefill rank 10.0.0.6:4100");

		assertThat(refused).isEqualTo("room 54 requires TLS, but the connection to prefill rank 10.0.0.6:4100 does not "
				+ "say what carries its bytes (its transport reports no path), so it cannot be shown to be TLS")
				.doesNotContain("unknown path");
		assertThat(PathCheck.refusal(54, RoomPath.Requirement.ANY, RoomPath.UNKNOWN, "prefill rank 10.0.0.6:4100"))
				.isNull();
	}
}
