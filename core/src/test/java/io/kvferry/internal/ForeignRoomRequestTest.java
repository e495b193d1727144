package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThatCode;

import java.time.Duration;

import io.kvferry.test.rogue.RogueDecodeWorld;
import io.kvferry.test.rogue.SpiRogue;
import io.kvferry.transport.local.InMemoryKVTransport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.test.scheduler.VirtualTimeScheduler;

/**
 * A decode rank can end only the prefill rooms it asked for: a transfer request or an abort from decode rank B naming a
 * room that decode rank A already asked for is B's alone to answer, and A's room still succeeds byte-exact. The chains
 * the rogue decode property shrank to, replayed over the in-memory transport on virtual time.
 */
class ForeignRoomRequestTest {

	private final VirtualTimeScheduler vts = VirtualTimeScheduler.create();
	private final InMemoryKVTransport transport = InMemoryKVTransport.create(vts);
	private final RogueDecodeWorld world = new RogueDecodeWorld(new RogueDecodeWorld.Setup(() -> transport,
			(prefill, inbound) -> SpiRogue.dial(transport, prefill, inbound), vts, Duration.ofSeconds(10),
			Duration.ofSeconds(3)));

	@AfterEach
	void close() {
		world.close();
		vts.dispose();
	}

	@Test
	void aRequestForAnotherDecodesRoomIsRefusedToItsSenderAlone() {
		world.connect(1, RogueDecodeWorld.Hello.HONEST, true);
		world.openGood(1, true);
		assertThatCode(() -> {
			world.ask(0, RogueDecodeWorld.Ask.OTHER_DECODES_ROOM, 0, 0);
			world.end();
		}).doesNotThrowAnyException();
	}

	@Test
	void anAbortOfAnotherDecodesRoomLeavesTheRoomAlone() {
		world.connect(1, RogueDecodeWorld.Hello.HONEST, true);
		world.openGood(1, true);
		assertThatCode(() -> {
			world.abort(0, RogueDecodeWorld.Target.OTHER_DECODES, 2);
			world.end();
		}).doesNotThrowAnyException();
	}
}
