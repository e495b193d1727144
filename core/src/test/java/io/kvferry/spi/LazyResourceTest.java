package io.kvferry.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;

/**
 * The resource a transport or client builds on first use: built once and kept, one winner when threads race (the
 * losers' copies ended unused), nothing built after the disposal, and the disposal's owner told once.
 */
class LazyResourceTest {

	private final List<Object> discarded = new CopyOnWriteArrayList<>();
	private final LazyResource<Object> holder = new LazyResource<>(null, () -> new IllegalStateException("gone"));

	@Test
	void builtOnFirstUseAndKept() {
		AtomicInteger built = new AtomicInteger();
		assertThat(holder.peek()).isNull();
		Object first = holder.get(() -> "r" + built.incrementAndGet(), discarded::add);
		assertThat(holder.get(() -> "r" + built.incrementAndGet(), discarded::add)).isSameAs(first);
		assertThat(holder.peek()).isSameAs(first);
		assertThat(built).hasValue(1);
		assertThat(discarded).isEmpty();
	}

	@Test
	void aGivenResourceIsNeverBuilt() {
		LazyResource<String> given = new LazyResource<>("caller's", () -> new IllegalStateException("gone"));
		assertThat(given.get(() -> "built", discarded::add)).isEqualTo("caller's");
		assertThat(discarded).isEmpty();
	}

	@Test
	void theLoserOfARaceGetsTheWinnersResourceAndItsOwnIsEnded() throws Exception {
		CountDownLatch slowBuilding = new CountDownLatch(1);
		CountDownLatch fastDone = new CountDownLatch(1);
		AtomicReference<Object> slowGot = new AtomicReference<>();
		Thread slow = new Thread(() -> slowGot.set(holder.get(() -> {
			slowBuilding.countDown();
			await(fastDone);
			return "slow";
		}, discarded::add)));
		slow.start();
		assertThat(slowBuilding.await(10, TimeUnit.SECONDS)).isTrue();
		assertThat(holder.get(() -> "fast", discarded::add)).isEqualTo("fast");
		fastDone.countDown();
		slow.join(10_000);
		assertThat(slowGot.get()).isEqualTo("fast");
		assertThat(discarded).containsExactly("slow");
	}

	@Test
	void nothingIsBuiltAfterTheDisposalAndWhatWasBuiltMeanwhileIsEnded() {
		assertThatThrownBy(() -> holder.get(() -> {
			// Disposed while this call builds: its resource must not be kept.
			assertThat(holder.dispose()).isTrue();
			return "late";
		}, discarded::add)).isInstanceOf(IllegalStateException.class).hasMessage("gone");
		assertThat(discarded).containsExactly("late");
		assertThat(holder.peek()).isNull();
		assertThatThrownBy(() -> holder.get(() -> "again", discarded::add)).hasMessage("gone");
		assertThat(discarded).containsExactly("late");
	}

	@Test
	void theFirstDisposalAloneIsToldToEndTheResourceWhichStaysReadable() {
		Object r = holder.get(() -> "r", discarded::add);
		assertThat(holder.isDisposed()).isFalse();
		assertThat(holder.dispose()).isTrue();
		assertThat(holder.dispose()).isFalse();
		assertThat(holder.isDisposed()).isTrue();
		assertThat(holder.peek()).isSameAs(r);
		assertThatThrownBy(() -> holder.get(() -> "r2", discarded::add)).hasMessage("gone");
	}

	private static void await(CountDownLatch latch) {
		try {
			if (!latch.await(10, TimeUnit.SECONDS)) {
				throw new AssertionError("latch not released");
			}
		}
		catch (InterruptedException e) {
			Thread.currentThread().interrupt();
			throw new AssertionError(e);
		}
	}
}
