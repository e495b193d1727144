package io.kvferry.transport.netty.it;

import static io.kvferry.transport.netty.it.FaultRig.T;
import static io.kvferry.transport.netty.it.LiveRoom.range;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import io.kvferry.HostPort;
import io.kvferry.KVManager;
import io.kvferry.DecodeKVManager;
import io.kvferry.DecodeSpec;
import io.kvferry.PrefillKVManager;
import io.kvferry.KVPoll;
import io.kvferry.PrefillSpec;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.bootstrap.PrefillRegistration;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RoomResult;
import io.kvferry.transport.netty.NettyKVTransport;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;

/**
 * The link between decode and one prefill rank is cut mid-room (a TCP proxy in between resets both legs), stays down
 * for a while, and comes back: live rooms fail on both sides naming the lost connection, a room asked for while the
 * rank is unreachable fails its handshake, and rooms after the link is back go through a new connection byte-exact.
 */
class ConnectionCutIT {

	/** 8 layers of Llama-3-8B heads: 16 KiB per page per layer buffer on each of two prefill ranks. */
	private static final ModelShape SHAPE = ModelShape.llama3_8b().withLayers(8);
	private static final int ROOM_PAGES = 32;
	private static final int LIVE_ROOMS = 3;
	/** How long the cut may take to fail every live room: generous, it takes milliseconds. */
	private static final Duration FAIL_BOUND = Duration.ofSeconds(10);
	/** Connections decode keeps to each prefill rank (the rig's managers use the default). */
	private static final int STRIPES = DecodeSpec.DEFAULT_STRIPES;

	@Test
	void cutLinkFailsLiveRoomsOnBothSidesAndRestoredLinkServesNewRoomsByteExact() {
		// Prefill ranks must not register their real port again over the proxy's (re-registration overwrites).
		try (FaultRig rig = FaultRig.start(SHAPE, 2, 1, 256, 16, NettyKVTransport.create(),
				spec -> spec instanceof PrefillSpec p ? p.reregisterInterval(Duration.ZERO) : spec)) {
			List<PrefillKVManager> prefill = rig.cluster.prefillManagers().get(0);
			DecodeKVManager decode = rig.cluster.decodeManagers().get(0);
			try (TcpProxy proxy = TcpProxy.start(prefill.get(0).endpoint())) {
				HostPort proxied = proxy.address();
				StepVerifier.create(rig.client.register(rig.bootstrap(), PrefillRegistration.prefill(
						prefill.get(0).layout(), proxied.host(), proxied.port(), SHAPE.pageSize())))
						.expectComplete()
						.verify(T);
				StepVerifier.create(rig.client.rankEndpoint(rig.bootstrap(), 0, 0, 0))
						.expectNext(proxied)
						.expectComplete()
						.verify(T);

				List<LiveRoom> live = new ArrayList<>();
				for (int i = 0; i < LIVE_ROOMS; i++) {
					int[] pages = range(i * ROOM_PAGES, (i + 1) * ROOM_PAGES);
					LiveRoom room = LiveRoom.open(rig.bootstrap(), 10 + i, prefill, rig.cluster.prefillMemory().get(0),
							List.of(decode), rig.cluster.decodeMemory(), pages, pages, i, i);
					room.send(0, ROOM_PAGES / 2);
					awaitState(room.receivers.get(0), KVPoll.TRANSFERRING);
					// Decode may see rank 1's bytes first: the cut must find the room on the proxied rank too.
					awaitState(room.senders.get(0), KVPoll.TRANSFERRING);
					live.add(room);
				}
				assertThat(proxy.openChannels()).as("each stripe of one decode session relayed, both legs")
						.isEqualTo(2 * STRIPES);

				long cutAt = System.nanoTime();
				assertThat(proxy.cut()).isEqualTo(2 * STRIPES);
				for (LiveRoom room : live) {
					StepVerifier.create(room.receivers.get(0).completion())
							.expectErrorSatisfies(e -> assertThat(e.getMessage())
									.contains("Lost connection with prefill rank " + proxied))
							.verify(FAIL_BOUND);
					StepVerifier.create(room.senders.get(0).completion())
							.expectErrorSatisfies(e -> assertThat(e.getMessage())
									.contains("Lost connection with decode"))
							.verify(FAIL_BOUND);
					// The other prefill rank hears it from decode, which aborts the room there.
					StepVerifier.create(room.senders.get(1).completion())
							.expectErrorSatisfies(e -> assertThat(e.getMessage()).contains("Aborted by decode")
									.contains("Lost connection with prefill rank " + proxied))
							.verify(FAIL_BOUND);
				}
				assertThat(Duration.ofNanos(System.nanoTime() - cutAt)).isLessThan(FAIL_BOUND);
				for (LiveRoom room : live) {
					assertThat(decode.status(room.id)).as("decode forgot room %d", room.id).isNull();
					assertThat(prefill.get(0).status(room.id)).as("prefill 0 forgot room %d", room.id).isNull();
					assertThat(prefill.get(1).status(room.id)).as("prefill 1 forgot room %d", room.id).isNull();
				}

				// While the rank is unreachable a new room cannot get past its handshake.
				proxy.refuse(true);
				int acceptedBefore = proxy.accepted();
				long askedAt = System.nanoTime();
				KVReceiver unreachable = decode.receiver(rig.bootstrap(), 20);
				unreachable.sendMetadata(range(200, 208), 15, new int[0]);
				StepVerifier.create(unreachable.completion())
						.expectErrorSatisfies(e -> assertThat(e.getMessage()).contains("Could not bootstrap room 20")
								// Refused either while connecting or right after: both name the proxy.
								.contains(proxied.toString()))
						.verify(FAIL_BOUND);
				assertThat(Duration.ofNanos(System.nanoTime() - askedAt)).isLessThan(FAIL_BOUND);
				assertThat(proxy.accepted()).as("decode dialled again").isGreaterThan(acceptedBefore);

				// Link back: decode dials a fresh connection and rooms are byte-exact again.
				proxy.refuse(false);
				int acceptedWhileDown = proxy.accepted();
				Random random = new Random(6);
				for (long room = 30; room < 34; room++) {
					RoomResult r = rig.cluster.run(room, 1 + random.nextInt(24 * SHAPE.pageSize()),
							1 + random.nextInt(4), random).block(T);
					assertThat(r.failure()).as("room %d", room).isNull();
				}
				assertThat(proxy.accepted()).as("exactly one new session").isEqualTo(acceptedWhileDown + STRIPES);
				assertThat(proxy.openChannels()).isEqualTo(2 * STRIPES);
			}
		}
	}

	private static void awaitState(KVReceiver receiver, KVPoll state) {
		awaitState(receiver.states(), state);
	}

	private static void awaitState(KVSender sender, KVPoll state) {
		awaitState(sender.states(), state);
	}

	private static void awaitState(Flux<KVPoll> states, KVPoll state) {
		StepVerifier.create(states)
				.thenConsumeWhile(s -> s != state && !s.isTerminal())
				.expectNext(state)
				.thenCancel()
				.verify(T);
	}
}
