package io.kvferry.cli.netns;

import io.kvferry.test.Child;
import io.kvferry.cli.RestartScenario;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@link RestartScenario} across two hosts, as in the field: the bootstrap server and prefill on one network
 * namespace, decode on another, each role told its host's address. Skipped, with the reason, where namespaces cannot
 * be made (not root, no iproute2).
 */
@Timeout(120)
class NetnsRestartTest {

	private static final int MTU = 1500;

	@BeforeAll
	static void namespacesCanBeMade() {
		NetnsHosts.assumeAvailable();
	}

	@Test
	void decodesStartedOneAfterAnotherAndAKilledPrefillRestartedServeEveryRoomAcrossHosts() throws Exception {
		try (NetnsHosts net = NetnsHosts.create(MTU, RestartScenario.PREFILL, RestartScenario.DECODE)) {
			RestartScenario.run(new RestartScenario.Hosts() {
				@Override
				public String address(String role) {
					return net.address(host(role));
				}

				@Override
				public Child start(String role, String name, String... args) throws Exception {
					return net.start(host(role), name, args);
				}
			}, 2, RestartScenario.Stop.KILL);
		}
	}

	/** The bootstrap server shares prefill's host. */
	private static String host(String role) {
		return RestartScenario.BOOTSTRAP.equals(role) ? RestartScenario.PREFILL : role;
	}
}
