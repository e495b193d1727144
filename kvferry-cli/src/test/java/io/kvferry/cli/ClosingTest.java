package io.kvferry.cli;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;

import io.kvferry.KVFerryException;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

/** A command's bounded wait for its managers to close says what did not close, and what a close waits for. */
class ClosingTest {

	@Test
	void aCloseThatOutlastsItsBoundNamesWhatDidNotClose() {
		assertThatThrownBy(() -> Closing.await(Mono.never(), Duration.ofMillis(50), "the demo's KV managers"))
				.isInstanceOf(KVFerryException.class)
				.hasMessageStartingWith("the demo's KV managers did not finish closing within 50 ms: ")
				.hasMessageContaining("waits for its peer's answer");
	}

	@Test
	void aCloseThatEndsInTimeOrFailsIsTakenAsItIs() {
		assertThatCode(() -> Closing.await(Mono.empty(), Duration.ofSeconds(5), "x")).doesNotThrowAnyException();
		assertThatThrownBy(() -> Closing.await(Mono.error(new KVFerryException("listener would not close")),
				Duration.ofSeconds(5), "x")).hasMessage("listener would not close");
	}
}
