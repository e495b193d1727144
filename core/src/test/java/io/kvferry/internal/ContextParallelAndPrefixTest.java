package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.Random;

import io.kvferry.DecodeKVManager;
import io.kvferry.HostPort;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVReceiver;
import io.kvferry.KVTransferException;
import io.kvferry.ParallelLayout;
import io.kvferry.PrefillKVManager;
import io.kvferry.test.InMemoryBootstrap;
import io.kvferry.harness.KVCluster;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.harness.RoomResult;
import io.kvferry.transport.local.InMemoryKVTransport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;

/** What each prefill CP rank sends, and what a decode prefix leaves to move, counted on the managers. */
class ContextParallelAndPrefixTest {

	private static final HostPort BOOTSTRAP = new HostPort("127.0.0.1", 8998);
	// One layer, one 8-head page of 4 tokens: 64 B per page and buffer; aux rows of 64 B, state slots of 32 B.
	private static final ModelShape SHAPE = new ModelShape(1, 1, 8, 2, 4, false, 0, 64, 32);
	private static final long PAGE_BYTES = 2L * SHAPE.itemLen(1);

	private final InMemoryKVTransport transport = InMemoryKVTransport.create();
	private KVCluster cluster;

	@AfterEach
	void close() {
		if (cluster != null) {
			cluster.close().block(Duration.ofSeconds(10));
		}
	}

	private KVCluster start(int cp, boolean allCpRanks, double prefix) {
		cluster = KVCluster.builder().shape(SHAPE).prefill(1, 1, 1).prefillCp(cp, allCpRanks, false)
				.decodePrefix(prefix).decode(1, 1).capacity(32, 4).contiguous(true).transport(transport)
				.bootstrapClient(new InMemoryBootstrap()).bootstrapAddress(BOOTSTRAP).startNow(Duration.ofSeconds(10));
		return cluster;
	}

	private RoomResult run(long room, int tokens) {
		RoomResult r = cluster.run(room, tokens, 2, new Random(room)).block(Duration.ofSeconds(10));
		assertThat(r).isNotNull();
		assertThat(r.failure()).isNull();
		return r;
	}

	@Test
	void withAllCpRanksEachSendsItsShareAndTheFirstRanksOneMore() {
		start(2, true, 0);
		run(1, 5 * 4);
		List<PrefillKVManager> ranks = cluster.prefillManagers().get(0);
		assertThat(ranks.get(0).stats().pagesSent()).isEqualTo(3);
		assertThat(ranks.get(1).stats().pagesSent()).isEqualTo(2);
		// Aux and state go with every CP rank's last chunk, as in SGLang; every byte was counted on decode.
		long auxAndState = 64 + 32;
		assertThat(cluster.decodeManagers().get(0).stats().bytesReceived())
				.isEqualTo(5 * PAGE_BYTES + 2 * auxAndState);
	}

	@Test
	void withoutItOnlyCpRankZeroSendsAndTheOthersSucceedWithoutMovingData() {
		start(2, false, 0);
		run(2, 5 * 4);
		List<PrefillKVManager> ranks = cluster.prefillManagers().get(0);
		assertThat(ranks.get(0).stats().pagesSent()).isEqualTo(5);
		assertThat(ranks.get(1).stats().bytesSent()).isZero();
		assertThat(ranks.get(1).stats().roomsSucceeded()).isEqualTo(1);
		assertThat(ranks.get(1).stats().connections()).isZero();
	}

	@Test
	void aFullPrefixHitMovesNoPageButAuxAndStateStillLandAndTheRoomSucceeds() {
		start(1, false, 1);
		run(3, 6 * 4);
		assertThat(cluster.prefillManagers().get(0).get(0).stats().pagesSent()).isZero();
		assertThat(cluster.decodeManagers().get(0).stats().bytesReceived()).isEqualTo(64 + 32);
		assertThat(cluster.decodeManagers().get(0).stats().roomsSucceeded()).isEqualTo(1);
	}

	@Test
	void aPartialPrefixMovesOnlyThePagesAfterIt() {
		start(1, false, 0.5);
		run(4, 6 * 4);
		assertThat(cluster.prefillManagers().get(0).get(0).stats().pagesSent()).isEqualTo(3);
	}

	@Test
	void cpRanksThatDisagreeOnAllCpRanksTransferFailTheRoomByName() {
		// CP rank 1 sends its share only if it knows: one that does not would leave decode waiting for its Success.
		cluster = KVCluster.builder().shape(SHAPE).prefill(1, 1, 1).prefillCp(2, true, false).decode(1, 1)
				.capacity(32, 4).transport(transport).bootstrapClient(new InMemoryBootstrap()).bootstrapAddress(BOOTSTRAP)
				.customize(spec -> spec instanceof io.kvferry.PrefillSpec p && p.toString().contains("attnCpRank=1")
						? p.allCpRanksTransfer(false) : spec)
				.startNow(Duration.ofSeconds(10));
		RoomResult r = cluster.run(6, 20, 1, new Random(6)).block(Duration.ofSeconds(10));
		assertThat(r).isNotNull();
		assertThat(r.failure()).contains("prefill CP rank 1").contains("allCpRanksTransfer=false")
				.contains("expected: the same on every CP rank of an instance");
	}

	@Test
	void allCpRanksTransferAndDsaLayerSplitTogetherAreRefused() {
		ParallelLayout cp = ParallelLayout.SINGLE.withAttnCp(2, 0);
		RankMemory mem = RankMemory.prefill(SHAPE, cp, 4, 1, 1);
		assertThatThrownBy(() -> KVManagerSpec.prefill().kvArgs(mem.kvArgs()).layout(cp).transport(transport)
				.bootstrapClient(new InMemoryBootstrap()).bootstrapAddress(BOOTSTRAP).allCpRanksTransfer(true)
				.dsaCacheLayerSplit(true).startNow(Duration.ofSeconds(10)))
				.isInstanceOf(IllegalStateException.class)
				.hasMessageContaining("allCpRanksTransfer and dsaCacheLayerSplit : both on");
	}

	@Test
	void aPrefixMustBeWholePagesAndDecodeMustNotUseCp() {
		start(1, false, 0);
		DecodeKVManager decode = cluster.decodeManagers().get(0);
		KVReceiver receiver = decode.receiver(BOOTSTRAP, 5);
		assertThatThrownBy(() -> receiver.sendMetadata(6, new int[] { 1 }, 0, new int[][] { { 0 } }))
				.isInstanceOf(IllegalArgumentException.class)
				.hasMessage("decodePrefixLen : 6 (expected: >= 0 and a multiple of page_size 4: decode holds whole "
						+ "pages of the prefix)");
		assertThatThrownBy(() -> receiver.sendMetadata(0, new int[] { 1 }, 0, new int[][] { { 0 }, { 1 } }))
				.hasMessageContaining("stateIndices : 2 lists (expected: 1");
		receiver.abort("done");
		StepVerifier.create(receiver.completion()).expectError(KVTransferException.class)
				.verify(Duration.ofSeconds(10));
		ParallelLayout cpLayout = ParallelLayout.SINGLE.withAttnCp(2, 0);
		RankMemory mem = RankMemory.decode(SHAPE, cpLayout, 4, 1, 1);
		assertThatThrownBy(() -> KVManagerSpec.decode().kvArgs(mem.kvArgs()).layout(cpLayout).transport(transport)
				.bootstrapClient(new InMemoryBootstrap()).startNow(Duration.ofSeconds(10)))
				.isInstanceOf(IllegalStateException.class)
				.hasMessage("layout : attn_cp_size=2 on decode without MLA (expected: 1; PD decode DCP requires an "
						+ "MLA or hybrid-MLA KV pool)");
	}
}
