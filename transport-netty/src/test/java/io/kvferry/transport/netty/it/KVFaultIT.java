package io.kvferry.transport.netty.it;

import static io.kvferry.transport.netty.it.LoopbackCluster.T;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.Arrays;
import java.util.function.UnaryOperator;

import io.kvferry.KVManager;
import io.kvferry.PrefillKVManager;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.KVTransferException;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;

/** Peers that vanish or give up in the middle of a room, over real sockets. */
class KVFaultIT {

	private static final int PAGES = 48;
	private static final int[] SRC = range(0, PAGES);
	private static final int[] DST = range(0, PAGES);

	private static int[] range(int from, int to) {
		return java.util.stream.IntStream.range(from, to).toArray();
	}

	private static LoopbackCluster cluster() {
		return LoopbackCluster.start(ModelShape.llama3_8b(), 1, 1, 1, 1, 1, PAGES, 4, UnaryOperator.identity());
	}

	private static void await(Flux<KVPoll> states, KVPoll state) {
		StepVerifier.create(states).thenConsumeWhile(s -> s != state).expectNext(state).thenCancel().verify(T);
	}

	/** Starts a room and sends its first half; returns once decode has received bytes. */
	private static KVSender startRoom(LoopbackCluster c, long room, KVReceiver receiver) {
		PrefillKVManager prefill = c.cluster.prefillManagers().get(0).get(0);
		RankMemory mem = c.cluster.prefillMemory().get(0).get(0);
		mem.fill(room, SRC, 0, new int[0]);
		receiver.sendMetadata(DST, 0, new int[0]);
		KVSender sender = prefill.sender(room);
		sender.init(PAGES, 0);
		sender.send(Arrays.copyOfRange(SRC, 0, PAGES / 2), new int[0]);
		await(receiver.states(), KVPoll.TRANSFERRING);
		return sender;
	}

	@Test
	void prefillGoneMidTransferFailsDecodesRoomWithAReason() {
		try (LoopbackCluster c = cluster()) {
			KVReceiver receiver = c.cluster.decodeManagers().get(0).receiver(c.cluster.bootstrapAddress(), 1);
			startRoom(c, 1, receiver);
			c.cluster.prefillManagers().get(0).get(0).disposeNow(T);
			StepVerifier.create(receiver.completion())
					.expectErrorSatisfies(e -> assertThat(e.getMessage()).containsAnyOf("Lost connection with prefill",
							"was closed"))
					.verify(Duration.ofSeconds(10));
		}
	}

	@Test
	void decodeGoneMidTransferFailsPrefillsRoom() {
		try (LoopbackCluster c = cluster()) {
			KVReceiver receiver = c.cluster.decodeManagers().get(0).receiver(c.cluster.bootstrapAddress(), 2);
			KVSender sender = startRoom(c, 2, receiver);
			c.cluster.decodeManagers().get(0).disposeNow(T);
			StepVerifier.create(sender.completion())
					.expectErrorSatisfies(e -> assertThat(e.getMessage()).contains("decode"))
					.verify(Duration.ofSeconds(10));
			assertThat(c.cluster.prefillManagers().get(0).get(0).status(2)).as("prefill freed the room").isNull();
		}
	}

	/** A rule-abiding prefill stops at the abort; the fence against one that does not is {@link AbortFenceIT}'s. */
	@Test
	void abortMidTransferStopsPrefillAndTheRestOfTheRoomNeverLands() {
		try (LoopbackCluster c = cluster()) {
			KVReceiver receiver = c.cluster.decodeManagers().get(0).receiver(c.cluster.bootstrapAddress(), 3);
			KVSender sender = startRoom(c, 3, receiver);
			receiver.abort("request cancelled");
			StepVerifier.create(receiver.completion()).expectError(KVTransferException.class).verify(T);
			RankMemory decodeMem = c.cluster.decodeMemory().get(0);
			long fenced = decodeMem.checksum(DST);
			// Prefill keeps feeding the room as an engine unaware of the abort would: nothing may land.
			sender.send(Arrays.copyOfRange(SRC, PAGES / 2, PAGES), new int[0]);
			StepVerifier.create(sender.completion())
					.expectErrorSatisfies(e -> assertThat(e.getMessage()).contains("Aborted by decode")
							.contains("request cancelled"))
					.verify(T);
			assertThat(decodeMem.checksum(DST)).isEqualTo(fenced);
			assertThat(decodeMem.verify(3, DST, 0, new int[0])).as("the second half never landed").isNotNull();
		}
	}
}
