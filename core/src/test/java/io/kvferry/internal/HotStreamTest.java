package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import org.junit.jupiter.api.Test;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;

/** What a hot stream keeps for subscribers to come: nothing, or (when it holds) a bounded backlog for the next one. */
class HotStreamTest {

	private static final Duration T = Duration.ofSeconds(10);

	private final List<Integer> overflowed = new CopyOnWriteArrayList<>();

	@Test
	void aStreamOfNewsKeepsNothingForLaterSubscribers() {
		HotStream<Integer> stream = new HotStream<>(Schedulers.immediate(), 4, overflowed::add);
		stream.emit(1);
		StepVerifier.create(stream.flux())
				.then(() -> stream.emit(2))
				.expectNext(2)
				.then(stream::complete)
				.verifyComplete();
		assertThat(overflowed).isEmpty();
	}

	@Test
	void aHoldingStreamGivesItsBacklogToTheNextSubscriberBeforeLaterItems() {
		HotStream<Integer> stream = new HotStream<>(Schedulers.immediate(), 4, overflowed::add, true);
		stream.emit(1);
		stream.emit(2);
		StepVerifier.create(stream.flux())
				.expectNext(1, 2)
				.then(() -> stream.emit(3))
				.expectNext(3)
				.thenCancel()
				.verify(T);
		assertThat(overflowed).isEmpty();
	}

	@Test
	void aHoldingStreamHoldsAtMostItsBufferAndOverflowsTheOldest() {
		HotStream<Integer> stream = new HotStream<>(Schedulers.immediate(), 2, overflowed::add, true);
		stream.emit(1);
		stream.emit(2);
		stream.emit(3);
		assertThat(overflowed).containsExactly(1);
		StepVerifier.create(stream.flux())
				.expectNext(2, 3)
				.thenCancel()
				.verify(T);
	}

	@Test
	void aHoldingStreamHoldsAgainOnceItsSubscribersLeft() {
		HotStream<Integer> stream = new HotStream<>(Schedulers.immediate(), 4, overflowed::add, true);
		StepVerifier.create(stream.flux())
				.then(() -> stream.emit(1))
				.expectNext(1)
				.thenCancel()
				.verify(T);
		stream.emit(2);
		StepVerifier.create(stream.flux())
				.expectNext(2)
				.thenCancel()
				.verify(T);
	}
}
