package io.kvferry.transport.ucx.tck;

import io.kvferry.transport.ucx.UcxKVTransport;
import io.kvferry.transport.ucx.UcxTestSupport;
import org.junit.jupiter.api.BeforeAll;

/** The transport contract over UCX's shared-memory transports (both sides on one host): decode reads every block one-sided. */
class UcxSharedMemoryTransportTckTest extends UcxTransportTck {

	@BeforeAll
	static void needsUcx() {
		UcxTestSupport.assumeUcx();
	}

	@Override
	UcxKVTransport configured() {
		return UcxKVTransport.create().tls("posix,cma,self").netDevices("lo");
	}
}
