package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;

import io.kvferry.DecodeKVManager;
import io.kvferry.FailureCause;
import io.kvferry.HostPort;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.KVTransferException;
import io.kvferry.ParallelLayout;
import io.kvferry.PrefillKVManager;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.test.InMemoryBootstrap;
import io.kvferry.transport.local.InMemoryKVTransport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;

/**
 * An abort is done by the call, not by a subscription: an engine that gives up on a request calls it and walks away,
 * and the room still fails on both sides and its pages are released. A second abort changes nothing.
 */
class AbortIsTheActionTest {

	private static final Duration T = Duration.ofSeconds(10);
	private static final ModelShape SHAPE = new ModelShape(2, 2, 16, 2, 4, false, 0, 64, 0);
	private static final HostPort BOOTSTRAP = new HostPort("127.0.0.1", 8998);

	private final InMemoryBootstrap bootstrap = new InMemoryBootstrap();
	private final InMemoryKVTransport transport = InMemoryKVTransport.create();
	private final RankMemory prefillMem = RankMemory.prefill(SHAPE, ParallelLayout.SINGLE, 64, 8, 8);
	private final RankMemory decodeMem = RankMemory.decode(SHAPE, ParallelLayout.SINGLE, 64, 8, 8);
	private PrefillKVManager prefill;
	private DecodeKVManager decode;

	@BeforeEach
	void start() {
		prefill = KVManagerSpec.prefill().kvArgs(prefillMem.kvArgs()).transport(transport).bootstrapClient(bootstrap)
				.bootstrapAddress(BOOTSTRAP).bindAddress(new HostPort("127.0.0.1", 0)).startNow();
		decode = KVManagerSpec.decode().kvArgs(decodeMem.kvArgs()).transport(transport).bootstrapClient(bootstrap)
				.startNow();
	}

	@AfterEach
	void close() {
		prefill.disposeNow(T);
		decode.disposeNow(T);
	}

	@Test
	void aDecodeAbortNobodySubscribedToFailsTheRoomAndReleasesItsPagesAndASecondAbortIsANoOp() {
		int[] src = { 0, 1, 2, 3 };
		prefillMem.fill(40, src, 0, new int[0]);
		KVReceiver receiver = decode.receiver(BOOTSTRAP, 40);
		receiver.sendMetadata(new int[] { 4, 5, 6, 7 }, 1, new int[0]);
		KVSender sender = prefill.sender(40);
		awaitState(sender, KVPoll.WAITING_FOR_INPUT);
		sender.init(src.length, 0);
		sender.send(new int[] { 0, 1 }, new int[0]);

		receiver.abort("client went away");
		assertThat(receiver.poll()).as("failed by the call, nothing subscribed").isEqualTo(KVPoll.FAILED);
		receiver.abort("again");
		StepVerifier.create(sender.completion())
				.expectErrorSatisfies(e -> assertThat(((KVTransferException) e).reason()).contains("client went away")
						.doesNotContain("again"))
				.verify(T);
		// The release signal, subscribed only now: the pages are safe to reuse, and the first reason stands.
		StepVerifier.create(receiver.completion())
				.expectErrorSatisfies(e -> {
					KVTransferException k = (KVTransferException) e;
					assertThat(k.failureCause()).isEqualTo(FailureCause.ABORTED);
					assertThat(k.reason()).contains("client went away").doesNotContain("again");
				})
				.verify(T);
		receiver.abort("once more, after the release");
		assertThat(receiver.poll()).isEqualTo(KVPoll.FAILED);
		assertThat(decode.stats().liveRooms()).as("the room is gone").isEmpty();
	}

	@Test
	void aPrefillAbortNobodySubscribedToFailsTheRoomOnBothSidesAndASecondAbortIsANoOp() {
		KVReceiver receiver = decode.receiver(BOOTSTRAP, 41);
		receiver.sendMetadata(new int[] { 1 }, -1, new int[0]);
		KVSender sender = prefill.sender(41);
		awaitState(sender, KVPoll.WAITING_FOR_INPUT);

		sender.abort("prefill ran out of memory");
		assertThat(sender.poll()).as("failed by the call, nothing subscribed").isEqualTo(KVPoll.FAILED);
		sender.abort("again");
		StepVerifier.create(receiver.completion())
				.expectErrorSatisfies(e -> assertThat(((KVTransferException) e).reason())
						.contains("prefill ran out of memory").doesNotContain("again"))
				.verify(T);
		// Handed off to decode: the source pages are safe to reuse, and the first reason stands.
		StepVerifier.create(sender.completion())
				.expectErrorSatisfies(e -> assertThat(((KVTransferException) e).reason())
						.contains("prefill ran out of memory").doesNotContain("again"))
				.verify(T);
	}

	private static void awaitState(KVSender sender, KVPoll state) {
		StepVerifier.create(sender.states()).thenConsumeWhile(s -> s != state).expectNext(state).thenCancel().verify(T);
	}
}
