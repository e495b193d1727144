package io.kvferry;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.management.ManagementFactory;

import org.junit.jupiter.api.Test;

class RoomTracerTest {

	/** What a manager without a tracer does for each room: it must allocate nothing. */
	private static long untracedRooms(int rooms) {
		long sum = 0;
		for (int i = 0; i < rooms; i++) {
			RoomTrace t = RoomTracer.NONE.start(DisaggregationMode.DECODE, "decode", i, "", i);
			t.event(RoomTrace.Event.BOOTSTRAP_RESOLVED, 0);
			t.event(RoomTrace.Event.CHUNK_SENT, i);
			sum += t.context().length();
			t.end(KVPoll.FAILED, FailureCause.DRAINING, "reason");
		}
		return sum;
	}

	@Test
	void withoutATracerARoomsTraceIsASharedNoOpThatAllocatesNothing() {
		assertThat(RoomTracer.NONE.start(DisaggregationMode.PREFILL, "p", 1, "00-ab", 0)).isSameAs(RoomTrace.NONE);
		assertThat(RoomTrace.NONE.context()).isEmpty();
		java.lang.management.ThreadMXBean bean = ManagementFactory.getThreadMXBean();
		assumeTrue(bean instanceof com.sun.management.ThreadMXBean sun && sun.isThreadAllocatedMemorySupported(),
				"per-thread allocation counters");
		com.sun.management.ThreadMXBean sun = (com.sun.management.ThreadMXBean) bean;
		untracedRooms(10_000);
		long before = sun.getCurrentThreadAllocatedBytes();
		long sum = untracedRooms(100_000);
		long allocated = sun.getCurrentThreadAllocatedBytes() - before;
		assertThat(sum).isZero();
		// The counter itself may cost a few bytes; a per-room allocation would show 100,000 times over.
		assertThat(allocated).as("bytes allocated by 100,000 untraced rooms' hook calls").isLessThan(1_000);
	}
}
