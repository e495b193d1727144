package io.kvferry.transport.netty.it;

import static io.kvferry.transport.netty.it.FaultRig.T;
import static io.kvferry.transport.netty.it.LiveRoom.range;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;

import io.kvferry.HostPort;
import io.kvferry.KVManager;
import io.kvferry.DecodeKVManager;
import io.kvferry.PrefillKVManager;
import io.kvferry.KVPoll;
import io.kvferry.PrefillSpec;
import io.kvferry.bootstrap.PrefillRegistration;
import io.kvferry.harness.ModelShape;
import io.kvferry.transport.netty.NettyKVTransport;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

/**
 * A prefill rank gives up on a room after it handed the room's last chunk to the transport, while most of the bytes are
 * still queued (a throttled link to decode makes sure of that): the queued bytes are dropped, so decode must learn that
 * the room failed, never that it succeeded.
 */
class PrefillAbortIT {

	/** 8 Llama-3-8B layers: 32 KiB per page per layer buffer, 16 MiB for the room below. */
	private static final ModelShape SHAPE = ModelShape.llama3_8b().withLayers(8);
	private static final int PAGES = 32;

	@Test
	void prefillAbortAfterTheLastChunkWasQueuedFailsTheRoomOnDecode() {
		NettyKVTransport netty = NettyKVTransport.create().writeBufferWaterMark(64 * 1024, 128 * 1024)
				.socketBufferSize(64 * 1024);
		try (FaultRig rig = FaultRig.start(SHAPE, 1, 1, 64, 4, netty, spec -> spec instanceof PrefillSpec p ? p.reregisterInterval(Duration.ZERO) : spec)) {
			PrefillKVManager prefill = rig.cluster.prefillManagers().get(0).get(0);
			DecodeKVManager decode = rig.cluster.decodeManagers().get(0);
			// About 8 MiB/s towards decode: the room would need two seconds, the abort comes at once.
			try (TcpProxy proxy = TcpProxy.throttled(prefill.endpoint(), 16 * 1024, Duration.ofMillis(2))) {
				HostPort proxied = proxy.address();
				StepVerifier.create(rig.client.register(rig.bootstrap(), PrefillRegistration.prefill(prefill.layout(),
						proxied.host(), proxied.port(), SHAPE.pageSize())))
						.expectComplete()
						.verify(T);
				int[] pages = range(0, PAGES);
				LiveRoom room = LiveRoom.open(rig.bootstrap(), 1, List.of(prefill), rig.cluster.prefillMemory().get(0),
						List.of(decode), rig.cluster.decodeMemory(), pages, pages, 0, 0);
				// Decode's destinations arrived: the last chunk is dispatched (data and Success queued) by sendAll.
				StepVerifier.create(room.senders.get(0).states())
						.thenConsumeWhile(s -> s == KVPoll.BOOTSTRAPPING)
						.expectNext(KVPoll.WAITING_FOR_INPUT)
						.thenCancel()
						.verify(T);
				room.sendAll();
				room.senders.get(0).abort("prefill gave up");

				StepVerifier.create(room.senders.get(0).completion())
						.expectErrorSatisfies(e -> assertThat(e.getMessage()).contains("prefill gave up"))
						.verify(T);
				String decodeSaw = room.receivers.get(0).completion().thenReturn("success")
						.onErrorResume(e -> Mono.just(e.getMessage()))
						.block(T);
				assertThat(decodeSaw).as("decode's outcome of a room whose bytes are %s",
						room.verify() == null ? "complete" : "incomplete (" + room.verify() + ")")
						.contains("Prefill rank " + proxied + " failed room 1: ").contains("prefill gave up");
				assertThat(proxy.relayedToClient()).as("most of the room never left prefill")
						.isLessThan(SHAPE.itemLen(1) * 2L * SHAPE.layers() * PAGES);
			}
		}
	}
}
