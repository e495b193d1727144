package io.kvferry.registry.etcd;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import reactor.blockhound.BlockingOperationError;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;

/** Proves BlockHound watches this module's tests: blocking on a non-blocking thread fails. */
class BlockHoundActiveTest {

	@Test
	void blockingOnANonBlockingThreadIsReported() {
		Mono<Boolean> blocking = Mono.fromCallable(() -> new CountDownLatch(1).await(1, TimeUnit.MILLISECONDS))
				.subscribeOn(Schedulers.parallel());
		StepVerifier.create(blocking)
				.expectError(BlockingOperationError.class)
				.verify(Duration.ofSeconds(10));
	}
}
