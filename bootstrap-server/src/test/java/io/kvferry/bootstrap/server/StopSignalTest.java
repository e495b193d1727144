package io.kvferry.bootstrap.server;

import java.time.Duration;

import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;
import sun.misc.Signal;

/**
 * A stop signal reaches the process as a value: the signal the JVM receives is emitted by name and the process keeps
 * running, so that the launcher drains and chooses its exit status. The test raises SIGTERM in its own JVM: with the
 * handler installed that no longer ends the process.
 */
class StopSignalTest {

	@Test
	void aSigtermIsEmittedByNameInsteadOfEndingTheProcess() {
		StepVerifier.create(StopSignal.install())
				.then(() -> Signal.raise(new Signal("TERM")))
				.expectNext("SIGTERM")
				.expectComplete()
				.verify(Duration.ofSeconds(10));
	}
}
