package io.kvferry.transport.netty.it;

import static io.kvferry.transport.netty.it.FaultRig.T;
import static io.kvferry.transport.netty.it.LiveRoom.range;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;

import io.kvferry.DecodeKVManager;
import io.kvferry.FailureCause;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVTransferException;
import io.kvferry.PrefillKVManager;
import io.kvferry.harness.ModelShape;
import io.kvferry.transport.netty.NettyKVTransport;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;

/**
 * A prefill rank drains over real sockets, with the real bootstrap server: the room in flight completes byte-exact,
 * a room decode asks for meanwhile fails at once with the draining cause (never by a timeout), and the drain
 * completes when the last room ended.
 */
class DrainIT {

	private static final ModelShape SHAPE = ModelShape.llama3_8b().withLayers(2);

	@Test
	void aDrainingPrefillFinishesTheRoomInFlightAndRefusesTheNextOneAtOnce() {
		try (FaultRig rig = FaultRig.start(SHAPE, 1, 1, 64, 4, NettyKVTransport.create(), spec -> spec
				.bootstrapTimeout(Duration.ofSeconds(60)).waitingTimeout(Duration.ofSeconds(60)))) {
			PrefillKVManager prefill = rig.cluster.prefillManagers().get(0).get(0);
			DecodeKVManager decode = rig.cluster.decodeManagers().get(0);
			LiveRoom room = LiveRoom.open(rig.bootstrap(), 1, List.of(prefill), rig.cluster.prefillMemory().get(0),
					List.of(decode), rig.cluster.decodeMemory(), range(0, 8), range(8, 16), 0, 1);
			StepVerifier.create(room.senders.get(0).states().filter(s -> s == KVPoll.WAITING_FOR_INPUT).take(1))
					.expectNext(KVPoll.WAITING_FOR_INPUT).expectComplete().verify(T);

			long start = System.nanoTime();
			StepVerifier.create(prefill.drain(T))
					.expectSubscription()
					.then(() -> {
						KVReceiver next = decode.receiver(rig.bootstrap(), 2);
						next.sendMetadata(range(20, 24), 2, new int[0]);
						StepVerifier.create(next.completion())
								.expectErrorSatisfies(e -> {
									KVTransferException k = (KVTransferException) e;
									assertThat(k.failureCause()).as(k.reason()).isEqualTo(FailureCause.DRAINING);
									assertThat(k.reason()).contains("prefill rank " + prefill + " (" + prefill.endpoint()
											+ ") is draining and admits no new rooms");
								})
								.verify(T);
						room.send(0, 4);
						room.send(4, 8);
					})
					.expectComplete()
					.verify(T);
			System.out.printf("kvferry drain over sockets: %d ms from drain to the last room's end%n",
					(System.nanoTime() - start) / 1_000_000);
			StepVerifier.create(room.completion()).expectComplete().verify(T);
			assertThat(room.verify()).isNull();
			assertThat(decode.stats().failures()).containsEntry(FailureCause.DRAINING, 1L)
					.containsEntry(FailureCause.TIMEOUT, 0L);
		}
	}
}
