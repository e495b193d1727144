package io.kvferry.transport.netty;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import io.kvferry.DecodeKVManager;
import io.kvferry.FailureCause;
import io.kvferry.HostPort;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.ParallelLayout;
import io.kvferry.bootstrap.PrefillRegistration;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.PeerLayout;
import io.kvferry.spi.RegionLayout;
import io.kvferry.test.Child;
import io.kvferry.test.InMemoryBootstrap;
import io.kvferry.test.RecordingHandler;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;

/**
 * A decode peer that sends transfer requests of ~16 MB for rooms no engine claims, against a prefill in a JVM of 512
 * MiB: the requests the prefill holds stay within its bound (the rest fail at once as overload), the held ones fail
 * after the unclaimed-room timeout and free their place, and the prefill keeps serving a well-behaved decode.
 */
class OverloadReplayTest {

	static final ModelShape SHAPE = new ModelShape(1, 1, 16, 2, 4, false, 0, 0, 0);
	static final long PREFILL_PAGES = 4;
	private static final Duration T = Duration.ofSeconds(30);
	private static final int REQUESTS = 28;
	/** Pages per hostile request: 4 bytes each on the wire, ~16 MB, just under the default 16 MiB frame bound. */
	private static final int PAGES = 4_000_000;
	private static final HostPort BOOTSTRAP = new HostPort("127.0.0.1", 8998);
	/**
	 * How long the prefill holds a request no sender claims: the test waits it out twice. Every hostile request must
	 * be answered before the first held one expires, or a freed place would hold a fifth: all 28 were answered within
	 * 2 s of the first being sent on a loaded two-core machine, so 8 s leaves four times that.
	 */
	private static final Duration UNCLAIMED = Duration.ofSeconds(8);

	@Test
	void sixteenMegabyteRequestsOfUnclaimedRoomsAreBoundedAndThePrefillKeepsServing() throws Exception {
		try (Child child = Child.startMain("prefill", List.of("-Xmx512m", "-XX:MaxDirectMemorySize=512m"),
				OverloadPrefillMain.class, String.valueOf(UNCLAIMED.toMillis()))) {
			try {
				replay(child);
			}
			catch (Throwable e) {
				throw new AssertionError(e.getMessage() + "\nthe child said:\n" + child.output(), e);
			}
		}
	}

	private static void replay(Child child) throws Exception {
		{
			int port = Integer.parseInt(child.awaitLine("^endpoint (\\d+)$", T).group(1));
			HostPort endpoint = new HostPort("127.0.0.1", port);
			NettyKVTransport transport = NettyKVTransport.create().eventLoopThreads(1);
			RecordingHandler rogue = new RecordingHandler();
			rogue.connection = transport.connect(endpoint, rogue).block(T);
			RankMemory own = RankMemory.decode(SHAPE, ParallelLayout.SINGLE, 4, 0, 0);
			PeerLayout real = PeerLayout.of(own.kvArgs(), ParallelLayout.SINGLE);
			// It claims regions of 8M pages: the requests' page lists are then within the regions they address.
			List<RegionLayout> huge = real.kv().stream().map(r -> new RegionLayout(r.itemLen(), 8_000_000)).toList();
			PeerLayout claimed = new PeerLayout(real.engineRank(), real.parallel(), real.pageSize(), real.mla(),
					real.dtype(), real.kvHeadNum(), real.totalKvHeadNum(), real.startLayer(), real.draftLayers(), huge,
					real.aux(), real.state(), real.stateKinds(), real.stateTpDims(), real.allCpRanksTransfer(),
					real.dsaCacheLayerSplit());
			rogue.connection.send(new KVMessage.Hello(KVMessage.PROTOCOL_VERSION, claimed, false, 1));
			assertThat(rogue.nextMessage(T)).as("prefill's answer; the child said:\n%s", child.output())
					.isInstanceOf(KVMessage.HelloAck.class);

			int[] pages = new int[PAGES];
			Arrays.setAll(pages, i -> i);
			for (int i = 0; i < REQUESTS; i++) {
				rogue.connection.send(new KVMessage.TransferRequest(1000 + i, pages, -1, new int[0], 1, false, "", 0,
						new int[0]));
			}
			List<String> overloaded = new ArrayList<>();
			List<String> unclaimed = new ArrayList<>();
			for (KVMessage m : rogue.nextMessages(REQUESTS, T)) {
				assertThat(m).as("answer to a hostile request").isInstanceOf(KVMessage.Status.class);
				KVMessage.Status s = (KVMessage.Status) m;
				assertThat(s.status()).isEqualTo(KVPoll.FAILED);
				(s.cause() == FailureCause.OVERLOAD ? overloaded : unclaimed).add(s.room() + ": " + s.reason());
			}
			// 64 MiB of held request bytes is room for four of them; the rest are refused at once, the held ones
			// fail when no sender claims them.
			assertThat(unclaimed).hasSize(4).allSatisfy(r -> assertThat(r).contains("no sender claimed room"));
			assertThat(overloaded).hasSize(REQUESTS - 4)
					.allSatisfy(r -> assertThat(r).contains("already hold 64 MiB on this rank"));

			// Their place is free again: four more are held, not refused.
			for (int i = 0; i < 4; i++) {
				rogue.connection.send(new KVMessage.TransferRequest(2000 + i, pages, -1, new int[0], 1, false, "", 0,
						new int[0]));
			}
			for (KVMessage m : rogue.nextMessages(4, T)) {
				assertThat(((KVMessage.Status) m).reason()).contains("no sender claimed room");
			}

			InMemoryBootstrap bootstrap = new InMemoryBootstrap();
			bootstrap.register(BOOTSTRAP, PrefillRegistration.prefill(ParallelLayout.SINGLE, "127.0.0.1", port,
					SHAPE.pageSize())).block(T);
			DecodeKVManager decode = KVManagerSpec.decode().kvArgs(own.kvArgs()).transport(transport)
					.bootstrapClient(bootstrap).stripes(1).startNow();
			try {
				KVReceiver receiver = decode.receiver(BOOTSTRAP, 1);
				receiver.sendMetadata(new int[] { 2 }, -1, new int[0]);
				StepVerifier.create(receiver.completion()).expectComplete().verify(T);
				assertThat(own.verify(1, new int[] { 2 }, -1, new int[0])).isNull();
			}
			finally {
				decode.disposeNow(T);
				transport.dispose();
			}
			assertThat(child.output()).doesNotContain("OutOfMemoryError");
		}
	}
}
