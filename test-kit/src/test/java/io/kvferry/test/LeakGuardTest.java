package io.kvferry.test;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import org.junit.jupiter.api.Test;

class LeakGuardTest {

	@Test
	void reportsALeakedBuffer() {
		leak();
		LeakGuard.poll();
		assertThat(LeakGuard.reports()).anySatisfy(r -> assertThat(r).contains("LEAK"));
		// Clean up so this deliberate leak does not fail the class.
		new LeakGuard().beforeAll(null);
	}

	private static void leak() {
		ByteBuf buf = PooledByteBufAllocator.DEFAULT.directBuffer(32);
		buf.writeInt(42);
	}
}
