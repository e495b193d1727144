package io.kvferry.internal;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import io.kvferry.DecodeKVManager;
import io.kvferry.test.rogue.RoguePrefillActions;
import io.kvferry.test.rogue.RoguePrefillWorld;
import io.kvferry.test.rogue.RogueRuns;
import io.kvferry.test.rogue.SpiRogue;
import io.kvferry.transport.local.InMemoryKVTransport;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.statistics.Statistics;
import net.jqwik.api.lifecycle.AddLifecycleHook;
import net.jqwik.api.lifecycle.AfterTry;
import net.jqwik.api.state.ActionChain;
import reactor.test.scheduler.VirtualTimeScheduler;

/**
 * A rogue prefill rank against the real decode engine over the in-memory transport, on virtual time: every step runs
 * to its end on the test's thread, so each invariant of {@link RoguePrefillWorld} is checked at the exact moment after
 * each step, and a chain of rooms that time out takes no wall time. Reads decode's ledgers to bound their heap.
 */
@AddLifecycleHook(RogueRuns.class)
class RoguePrefillPropertyTest {

	private static final Duration STATE_TIMEOUT = Duration.ofSeconds(5);
	private static final Duration HANDSHAKE_TIMEOUT = Duration.ofSeconds(2);

	private final List<AutoCloseable> made = new ArrayList<>();

	@Property(tries = 200, seed = "7355608")
	void decodeNeverTakesWhatTheRogueDidNotWrite(@ForAll("chains") ActionChain<RoguePrefillWorld> chain) {
		RoguePrefillWorld w = chain.run();
		w.end();
		w.outcomes().forEach(o -> Statistics.label("rooms").collect(o));
	}

	@Provide
	Arbitrary<ActionChain<RoguePrefillWorld>> chains() {
		return RoguePrefillActions.chains(this::world, 40);
	}

	private RoguePrefillWorld world() {
		VirtualTimeScheduler vts = VirtualTimeScheduler.create();
		InMemoryKVTransport transport = InMemoryKVTransport.create(vts);
		RoguePrefillWorld w = new RoguePrefillWorld(new RoguePrefillWorld.Setup(() -> transport,
				peer -> SpiRogue.listen(transport, peer), vts, STATE_TIMEOUT, HANDSHAKE_TIMEOUT,
				RoguePrefillPropertyTest::ledgerBytes), made.size());
		made.add(w);
		made.add(vts::dispose);
		return w;
	}

	private static long ledgerBytes(DecodeKVManager decode, long room) {
		DecodeRoom r = ((DefaultDecodeKVManager) decode).table.get(room);
		return r == null ? -1 : r.ledgerBytes();
	}

	@AfterTry
	void close() throws Exception {
		for (AutoCloseable c : made) {
			c.close();
		}
		made.clear();
	}
}
