package io.kvferry.transport.netty.it;

import static io.kvferry.transport.netty.it.FaultRig.T;
import static io.kvferry.transport.netty.it.LiveRoom.range;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Random;
import java.util.function.UnaryOperator;

import io.kvferry.DecodeKVManager;
import io.kvferry.KVPoll;
import io.kvferry.KVTransferException;
import io.kvferry.PrefillKVManager;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RoomResult;
import io.kvferry.transport.netty.NettyKVTransport;
import io.kvferry.transport.netty.SameHost;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

/** Rooms end to end through the same-host shared-memory path: the engine over real sockets and real rings. */
class SameHostIT {

	private static final ModelShape SHAPE = ModelShape.llama3_8b().withLayers(8);

	@Test
	void roomsAcrossTwoByTwoRanksLandByteExactThroughTheRings() {
		NettyKVTransport netty = NettyKVTransport.create().sameHost(SameHost.AUTO);
		try (FaultRig rig = FaultRig.start(SHAPE, 2, 2, 96, 16, netty, UnaryOperator.identity())) {
			Random random = new Random(11);
			List<RoomResult> results = Flux.range(1, 12)
					.flatMap(i -> rig.cluster.run(i, 1 + random.nextInt(32 * 16), 1 + random.nextInt(4),
							new Random(i)), 4)
					.collectList()
					.block(T);
			assertThat(results).hasSize(12).allSatisfy(r -> assertThat(r.failure()).as("room %d", r.room()).isNull());
			assertThat(netty.sameHostConnections()).as("connections through a ring").isPositive();
		}
	}

	@Test
	void aRoomDecodeAbortedBeforeItsBytesCameWritesNothingIntoItsPages() {
		NettyKVTransport netty = NettyKVTransport.create().sameHost(SameHost.AUTO);
		try (FaultRig rig = FaultRig.start(SHAPE, 1, 1, 64, 4, netty, UnaryOperator.identity())) {
			PrefillKVManager prefill = rig.cluster.prefillManagers().get(0).get(0);
			DecodeKVManager decode = rig.cluster.decodeManagers().get(0);
			int[] pages = range(0, 32);
			LiveRoom room = LiveRoom.open(rig.bootstrap(), 1, List.of(prefill), rig.cluster.prefillMemory().get(0),
					List.of(decode), rig.cluster.decodeMemory(), pages, pages, 0, 0);
			StepVerifier.create(room.senders.get(0).states())
					.thenConsumeWhile(s -> s == KVPoll.BOOTSTRAPPING)
					.expectNext(KVPoll.WAITING_FOR_INPUT)
					.thenCancel()
					.verify(T);
			assertThat(netty.sameHostConnections()).isPositive();
			long before = room.checksum();
			room.receivers.get(0).abort("decode gave up");
			StepVerifier.create(room.receivers.get(0).completion()).expectError(KVTransferException.class).verify(T);
			room.sendAll();
			String decodeSaw = room.receivers.get(0).completion().thenReturn("success")
					.onErrorResume(e -> Mono.just(e.getMessage())).block(T);
			assertThat(decodeSaw).contains("decode gave up");
			StepVerifier.create(room.senders.get(0).completion()).expectError().verify(T);
			assertThat(room.checksum()).as("decode's pages after the abort").isEqualTo(before);
		}
	}
}
