package io.kvferry.transport.ucx;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Assumptions;

/**
 * Whether this module's tests can run: they need the system's UCX (Debian: {@code libucx0}). Where it is missing they
 * are skipped, saying why, unless {@code KVFERRY_REQUIRE_UCX} is set (CI sets it after installing UCX), where they
 * fail instead.
 */
public final class UcxTestSupport {

	private UcxTestSupport() {
	}

	public static void assumeUcx() {
		String problem = Ucx.unavailabilityReason();
		if (System.getenv("KVFERRY_REQUIRE_UCX") != null) {
			assertThat(problem).as("KVFERRY_REQUIRE_UCX is set but UCX is not usable").isNull();
		}
		Assumptions.assumeTrue(problem == null, () -> "skipped: " + problem);
	}

	/** @return a transport over UCX's TCP transport, on loopback only */
	public static UcxKVTransport tcp() {
		return UcxKVTransport.create().tls("tcp").netDevices("lo");
	}

	/** @return a transport over UCX's shared-memory transports (ranks of one host) */
	public static UcxKVTransport sharedMemory() {
		return UcxKVTransport.create().tls("posix,cma,self").netDevices("lo");
	}
}
