package io.kvferry.transport.ucx.tck;

import io.kvferry.transport.ucx.UcxKVTransport;
import io.kvferry.transport.ucx.UcxTestSupport;
import org.junit.jupiter.api.BeforeAll;

/**
 * The transport contract over UCX's shared-memory transports with a shared secret on both sides: the proof comes
 * first, then decode reads every block one-sided with the keys prefill announces on the connection.
 */
class UcxSharedSecretTransportTckTest extends UcxTransportTck {

	@BeforeAll
	static void needsUcx() {
		UcxTestSupport.assumeUcx();
	}

	@Override
	UcxKVTransport configured() {
		return UcxTestSupport.sharedMemory().sharedSecret("tck-secret-0123456789abcdef0123456789");
	}
}
