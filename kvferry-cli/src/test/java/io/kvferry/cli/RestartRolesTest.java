package io.kvferry.cli;

import io.kvferry.test.Child;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** {@link RestartScenario} on loopback: every role a process of its own on one host. */
@Timeout(120)
class RestartRolesTest {

	@Test
	void decodesStartedOneAfterAnotherAndADrainedPrefillRestartedServeEveryRoom() throws Exception {
		RestartScenario.run(new RestartScenario.Hosts() {
			@Override
			public String address(String role) {
				return "127.0.0.1";
			}

			@Override
			public Child start(String role, String name, String... args) throws Exception {
				return CliChild.start(name, args);
			}
		}, 1, RestartScenario.Stop.DRAIN);
	}
}
