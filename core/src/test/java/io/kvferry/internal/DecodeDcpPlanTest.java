package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import io.kvferry.DecodeKVManager;
import io.kvferry.HostPort;
import io.kvferry.KVArgs;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVReceiver;
import io.kvferry.MemoryRegion;
import io.kvferry.ParallelLayout;
import io.kvferry.TopologyException;
import io.kvferry.bootstrap.PrefillParallelInfo;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.internal.topology.RankMapping;
import io.kvferry.spi.PeerLayout;
import io.kvferry.test.InMemoryBootstrap;
import io.kvferry.transport.local.InMemoryKVTransport;
import org.junit.jupiter.api.Test;

/** The handshake's and the rank mapping's rules for a decode with context parallelism (DCP). */
class DecodeDcpPlanTest {

	// Regions that only describe memory: planning computes addresses and never touches them.
	private static final long BASE = 1L << 40;
	private static final int TOKEN = 1152;

	private static KVArgs mla(int pageSize, boolean mla) {
		List<MemoryRegion> kv = new ArrayList<>();
		for (int i = 0; i < (mla ? 2 : 4); i++) {
			kv.add(MemoryRegion.of(BASE + i * (1L << 36), 64L * TOKEN * pageSize, TOKEN * pageSize));
		}
		return KVArgs.builder().pageSize(pageSize).kvHeads(1, 1).mla(mla).kvRegions(kv).build();
	}

	private static ParallelLayout dcp(int size, int rank) {
		return ParallelLayout.tp(size, rank).withAttnCp(size, rank);
	}

	@Test
	void anMlaDecodeAtDcpTakesItsTokensAndAPrefixMustFillVirtualPages() {
		TransferPlan plan = TransferPlan.of(mla(16, true), ParallelLayout.SINGLE, PeerLayout.of(mla(16, true),
				dcp(4, 3)));
		assertThat(plan.dcpSize()).isEqualTo(4);
		assertThat(plan.wholePages(64)).isTrue();
		assertThat(plan.wholePages(16)).isFalse();
		// 5 prefill pages of 16 hold 65..80 tokens: rank 3 holds 16..20 of them, 1 or 2 pages.
		assertThat(plan.matches(5, 1)).isTrue();
		assertThat(plan.matches(5, 2)).isTrue();
		assertThat(plan.matches(5, 3)).isFalse();
		assertThat(plan.matches(5, 0)).isFalse();
	}

	@Test
	void theHandshakeRefusesWhatSglangRefuses() {
		assertThatThrownBy(() -> TransferPlan.of(mla(16, false), ParallelLayout.SINGLE,
				PeerLayout.of(mla(16, false), dcp(2, 0)))).isInstanceOf(TopologyException.class)
				.hasMessage("Unsupported PD DCP topology: 1 -> 2 (decode DCP requires an MLA or hybrid-MLA KV pool)");
		assertThatThrownBy(() -> TransferPlan.of(mla(16, true), ParallelLayout.SINGLE.withAttnCp(2, 0),
				PeerLayout.of(mla(16, true), dcp(2, 1)))).isInstanceOf(TopologyException.class)
				.hasMessage("PD decode DCP currently requires prefill attention CP=1, got 2");
		assertThatThrownBy(() -> TransferPlan.of(mla(16, true), ParallelLayout.SINGLE,
				PeerLayout.of(mla(4, true), dcp(2, 1)))).isInstanceOf(TopologyException.class)
				.hasMessage("decode DCP 2 with different page sizes: prefill page_size=16, decode page_size=4 "
						+ "(expected: equal page sizes)");
	}

	@Test
	void decodeDcpRanksMapOntoPrefillAsMlaTpRanksDo() {
		RankMapping m = RankMapping.plan(new PrefillParallelInfo(1, 1, 1, 16), dcp(4, 2), 2, 16, true);
		assertThat(m.targets()).hasSize(1);
		assertThat(m.targets().get(0).tpRank()).isZero();
		assertThat(m.requiredDstInfoNum()).isEqualTo(4);
		assertThatThrownBy(() -> RankMapping.plan(new PrefillParallelInfo(1, 1, 1, 16), dcp(4, 2), 2, 16, false))
				.isInstanceOf(TopologyException.class)
				.hasMessageStartingWith("Unsupported PD DCP topology: 1 -> 4");
	}

	@Test
	void anMlaDecodeStartsWithDcpAndRefusesAPrefixOfPartVirtualPages() {
		ModelShape shape = new ModelShape(4, 1, 32, 2, 4, true, 1, 64, 32);
		int page = shape.pageSize();
		ParallelLayout layout = dcp(2, 1);
		RankMemory mem = RankMemory.decode(shape, layout, 8, 1, 1);
		DecodeKVManager decode = KVManagerSpec.decode().kvArgs(mem.kvArgs()).layout(layout)
				.transport(InMemoryKVTransport.create()).bootstrapClient(new InMemoryBootstrap())
				.startNow(Duration.ofSeconds(10));
		try {
			KVReceiver receiver = decode.receiver(new HostPort("127.0.0.1", 8998), 7);
			assertThatThrownBy(() -> receiver.sendMetadata(page, new int[] { 1 }, 0, new int[][] { { 0 } }))
					.isInstanceOf(IllegalArgumentException.class)
					.hasMessage("decodePrefixLen : " + page + " (expected: >= 0 and a multiple of page_size " + 2 * page
							+ ": decode holds whole pages of the prefix)");
			receiver.abort("done");
		}
		finally {
			decode.dispose();
			decode.onDispose().block(Duration.ofSeconds(10));
		}
	}
}
