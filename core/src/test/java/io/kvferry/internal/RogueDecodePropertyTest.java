package io.kvferry.internal;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import io.kvferry.test.rogue.RogueDecodeActions;
import io.kvferry.test.rogue.RogueDecodeWorld;
import io.kvferry.test.rogue.RogueRuns;
import io.kvferry.test.rogue.SpiRogue;
import io.kvferry.transport.local.InMemoryKVTransport;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.AddLifecycleHook;
import net.jqwik.api.lifecycle.AfterTry;
import net.jqwik.api.state.ActionChain;
import net.jqwik.api.statistics.Statistics;
import reactor.test.scheduler.VirtualTimeScheduler;

/**
 * A rogue decode rank against the real prefill engine over the in-memory transport, on virtual time: every step runs to
 * its end on the test's thread, so each invariant of {@link RogueDecodeWorld} is checked at the exact moment after each
 * step, and leases and unclaimed rooms expire without wall time.
 */
@AddLifecycleHook(RogueRuns.class)
class RogueDecodePropertyTest {

	private static final Duration STATE_TIMEOUT = Duration.ofSeconds(10);
	private static final Duration LEASE = Duration.ofSeconds(3);

	private final List<AutoCloseable> made = new ArrayList<>();

	@Property(tries = 200, seed = "7355608")
	void prefillWritesOnlyWhatEachDecodeAsked(@ForAll("chains") ActionChain<RogueDecodeWorld> chain) {
		RogueDecodeWorld w = chain.run();
		w.end();
		w.outcomes().forEach(o -> Statistics.label("rooms").collect(o));
	}

	@Provide
	Arbitrary<ActionChain<RogueDecodeWorld>> chains() {
		return RogueDecodeActions.chains(this::world, 40);
	}

	private RogueDecodeWorld world() {
		VirtualTimeScheduler vts = VirtualTimeScheduler.create();
		InMemoryKVTransport transport = InMemoryKVTransport.create(vts);
		RogueDecodeWorld w = new RogueDecodeWorld(new RogueDecodeWorld.Setup(() -> transport,
				(prefill, inbound) -> SpiRogue.dial(transport, prefill, inbound), vts, STATE_TIMEOUT, LEASE));
		made.add(w);
		made.add(vts::dispose);
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
