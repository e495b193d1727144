package io.kvferry.transport.netty.it;

import static org.assertj.core.api.Assertions.assertThatCode;

import java.time.Duration;

import io.kvferry.test.rogue.RogueDecodeWorld;
import io.kvferry.test.rogue.SpiRogue;
import io.kvferry.transport.netty.NettyKVTransport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A decode rank that lists a destination page twice in its request gets its room refused: prefill would otherwise
 * write that page twice, and over TCP its engine's send threw on the scatter list it could not build from them ("piece
 * 1 duplicates piece 0"). The chain the rogue decode property shrank to, over loopback TCP.
 */
class RepeatedDestinationIT {

	private final NettyKVTransport transport = NettyKVTransport.create().eventLoopThreads(1);
	private final NettyKVTransport rogueTransport = NettyKVTransport.create().eventLoopThreads(1);
	private final RogueDecodeWorld world = new RogueDecodeWorld(new RogueDecodeWorld.Setup(() -> transport,
			(prefill, inbound) -> SpiRogue.dial(rogueTransport, prefill, inbound), null, Duration.ofSeconds(5),
			Duration.ofSeconds(3)));

	@AfterEach
	void close() {
		world.close();
		rogueTransport.disposeNow(Duration.ofSeconds(10));
		transport.disposeNow(Duration.ofSeconds(10));
	}

	@Test
	void aRequestListingAPageTwiceIsRefusedAndTheEngineSendsUndisturbed() {
		world.connect(1, RogueDecodeWorld.Hello.HONEST, true);
		assertThatCode(() -> {
			world.ask(0, RogueDecodeWorld.Ask.DUPLICATE_PAGES, 0, 1);
			world.serve(8);
			world.end();
		}).doesNotThrowAnyException();
	}
}
