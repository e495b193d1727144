package io.kvferry.transport.netty.it;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import io.kvferry.test.rogue.RoguePrefillActions;
import io.kvferry.test.rogue.RoguePrefillWorld;
import io.kvferry.test.rogue.RogueRuns;
import io.kvferry.transport.netty.NettyKVTransport;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
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
 * A rogue prefill rank against the real decode engine over loopback TCP: the rogue speaks the wire protocol byte by
 * byte ({@link RawRogue}), so besides every frame the in-memory run sends it writes malformed ones, announces leases
 * and layouts past their bounds, and goes silent, which decode's heartbeats must catch. Real time and real threads:
 * the world's invariants that hold at any moment are checked after every step, the rest once the run ended (the good
 * rooms and the rooms finished cleanly are awaited, then decode gives up the rogue's rooms still live and each must
 * release its pages).
 */
@AddLifecycleHook(RogueRuns.class)
class RoguePrefillTcpPropertyTest {

	private static final Duration STATE_TIMEOUT = Duration.ofSeconds(5);
	private static final Duration HANDSHAKE_TIMEOUT = Duration.ofSeconds(3);
	// Decode judges the rogue silent after two of the rogue's intervals, and the rogue answers each of decode's.
	private static final Duration HEARTBEAT = Duration.ofMillis(500);

	private static EventLoopGroup rogueLoops;
	private static NettyKVTransport transport;
	private final List<AutoCloseable> made = new ArrayList<>();

	@BeforeContainer
	static void start() {
		rogueLoops = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
		transport = NettyKVTransport.create().heartbeatInterval(HEARTBEAT).eventLoopThreads(2);
	}

	@AfterContainer
	static void stop() {
		transport.disposeNow(Duration.ofSeconds(10));
		rogueLoops.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(10, TimeUnit.SECONDS);
	}

	@Property(tries = 8, seed = "7355608")
	void decodeNeverTakesWhatTheRogueDidNotWrite(@ForAll("chains") ActionChain<RoguePrefillWorld> chain) {
		RoguePrefillWorld w = chain.run();
		w.end();
		w.outcomes().forEach(o -> Statistics.label("rooms").collect(o));
	}

	@Provide
	Arbitrary<ActionChain<RoguePrefillWorld>> chains() {
		return RoguePrefillActions.chains(this::world, 25);
	}

	private RoguePrefillWorld world() {
		RoguePrefillWorld w = new RoguePrefillWorld(new RoguePrefillWorld.Setup(() -> transport,
				peer -> new RawRogue(rogueLoops, peer, HEARTBEAT), null, STATE_TIMEOUT, HANDSHAKE_TIMEOUT, null),
				made.size());
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
