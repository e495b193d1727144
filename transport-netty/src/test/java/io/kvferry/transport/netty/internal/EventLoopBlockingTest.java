package io.kvferry.transport.netty.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import io.netty.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/** Proves BlockHound watches the transport's event loops, so the socket tests would catch a blocking call there. */
class EventLoopBlockingTest {

	@Test
	void blockingOnATransportEventLoopIsReported() throws Exception {
		EventLoopResources resources = EventLoopResources.create(TransportSettings.DEFAULT.withEventLoopThreads(1));
		try {
			// Parking is the blocking call every lock, latch and sleep ends in.
			Future<?> parking = resources.group().next().submit(() -> LockSupport.parkNanos(1_000));
			assertThat(parking.await(10, TimeUnit.SECONDS)).isTrue();
			assertThat(parking.cause()).isNotNull().hasMessageContaining("Blocking call!");
		}
		finally {
			resources.shutdown(Duration.ofSeconds(1)).await(10, TimeUnit.SECONDS);
		}
	}
}
