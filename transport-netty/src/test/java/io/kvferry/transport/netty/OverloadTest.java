package io.kvferry.transport.netty;

import java.time.Duration;

import io.kvferry.DecodeKVManager;
import io.kvferry.HostPort;
import io.kvferry.KVManagerSpec;
import io.kvferry.ParallelLayout;
import io.kvferry.PrefillKVManager;
import io.kvferry.harness.RankMemory;
import io.kvferry.test.InMemoryBootstrap;
import io.kvferry.test.OverloadScenarios;
import org.junit.jupiter.api.Test;

/**
 * Overload over real TCP on loopback: a room over decode's bound of rooms in flight (per prefill rank, in all) or
 * over prefill's bound of unclaimed rooms fails at once on both sides with a retry hint; the rooms under the bound
 * move every byte, and rooms are admitted again once they ended. Decode's admission runs on a non-blocking thread
 * under BlockHound.
 */
class OverloadTest {

	private static final Duration T = Duration.ofSeconds(20);
	private static final HostPort BOOTSTRAP = new HostPort("127.0.0.1", 8998);

	private static final OverloadScenarios.Starter TCP = (p, d) -> {
		InMemoryBootstrap bootstrap = new InMemoryBootstrap();
		NettyKVTransport prefillTransport = NettyKVTransport.create().eventLoopThreads(1);
		NettyKVTransport decodeTransport = NettyKVTransport.create().eventLoopThreads(1);
		RankMemory prefillMemory = RankMemory.prefill(OverloadScenarios.SHAPE, ParallelLayout.SINGLE,
				OverloadScenarios.PAGES, 0, 0);
		RankMemory decodeMemory = RankMemory.decode(OverloadScenarios.SHAPE, ParallelLayout.SINGLE,
				OverloadScenarios.PAGES, 0, 0);
		PrefillKVManager prefill = p.apply(KVManagerSpec.prefill().kvArgs(prefillMemory.kvArgs())
				.transport(prefillTransport).bootstrapClient(bootstrap).bootstrapAddress(BOOTSTRAP)
				.bindAddress(new HostPort("127.0.0.1", 0))).startNow(T);
		DecodeKVManager decode = d.apply(KVManagerSpec.decode().kvArgs(decodeMemory.kvArgs())
				.transport(decodeTransport).bootstrapClient(bootstrap)).startNow(T);
		return new OverloadScenarios.Managers(prefill, decode, prefillMemory, decodeMemory, BOOTSTRAP, () -> {
			decode.disposeNow(T);
			prefill.disposeNow(T);
			decodeTransport.disposeNow(T);
			prefillTransport.disposeNow(T);
		});
	};

	@Test
	void decodeRefusesARoomOverItsBoundPerPrefillRankAtOnceOnBothSides() throws Exception {
		OverloadScenarios.decodeBoundPerPrefillRank(TCP);
	}

	@Test
	void decodeRefusesARoomOverItsBoundInAllAtOnceOnBothSides() throws Exception {
		OverloadScenarios.decodeBoundInAll(TCP);
	}

	@Test
	void prefillRefusalCarriesItsHintToDecode() throws Exception {
		OverloadScenarios.prefillRefusalCarriesItsHint(TCP);
	}
}
