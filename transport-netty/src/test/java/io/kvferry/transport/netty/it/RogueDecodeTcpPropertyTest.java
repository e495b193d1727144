package io.kvferry.transport.netty.it;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import io.kvferry.test.rogue.RogueDecodeActions;
import io.kvferry.test.rogue.RogueDecodeWorld;
import io.kvferry.test.rogue.RogueRuns;
import io.kvferry.test.rogue.SpiRogue;
import io.kvferry.transport.netty.NettyKVTransport;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.AddLifecycleHook;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.AfterTry;
import net.jqwik.api.lifecycle.BeforeContainer;
import net.jqwik.api.state.ActionChain;
import net.jqwik.api.statistics.Statistics;

/**
 * A rogue decode rank against the real prefill engine over loopback TCP: the rogue dials prefill's listener with its
 * own transport and sends whatever its steps say, well-formed, over as many connections as it opens. Real time and real
 * threads: the invariants of {@link RogueDecodeWorld} that hold at any moment are checked after every step (what
 * prefill writes to the rogue is checked as it arrives), the rest once the run ended.
 */
@AddLifecycleHook(RogueRuns.class)
class RogueDecodeTcpPropertyTest {

	private static final Duration STATE_TIMEOUT = Duration.ofSeconds(5);
	private static final Duration LEASE = Duration.ofSeconds(3);

	private static NettyKVTransport transport;
	private static NettyKVTransport rogueTransport;
	private final List<AutoCloseable> made = new ArrayList<>();

	@BeforeContainer
	static void start() {
		transport = NettyKVTransport.create().eventLoopThreads(2);
		rogueTransport = NettyKVTransport.create().eventLoopThreads(1);
	}

	@AfterContainer
	static void stop() {
		transport.disposeNow(Duration.ofSeconds(10));
		rogueTransport.disposeNow(Duration.ofSeconds(10));
	}

	@Property(tries = 10, seed = "7355608")
	void prefillWritesOnlyWhatEachDecodeAsked(@ForAll("chains") ActionChain<RogueDecodeWorld> chain) {
		RogueDecodeWorld w = chain.run();
		w.end();
		w.outcomes().forEach(o -> Statistics.label("rooms").collect(o));
	}

	@Provide
	Arbitrary<ActionChain<RogueDecodeWorld>> chains() {
		return RogueDecodeActions.chains(this::world, 25);
	}

	private RogueDecodeWorld world() {
		RogueDecodeWorld w = new RogueDecodeWorld(new RogueDecodeWorld.Setup(() -> transport,
				(prefill, inbound) -> SpiRogue.dial(rogueTransport, prefill, inbound), null, STATE_TIMEOUT, LEASE));
		made.add(w);
		return w;
	}

	@AfterTry
	void close() throws Exception {
		for (AutoCloseable c : made) {
			c.close();
		}
		made.clear();
	}
}
