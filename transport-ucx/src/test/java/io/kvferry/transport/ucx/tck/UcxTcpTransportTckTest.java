package io.kvferry.transport.ucx.tck;

import io.kvferry.transport.ucx.UcxKVTransport;
import io.kvferry.transport.ucx.UcxTestSupport;
import org.junit.jupiter.api.BeforeAll;

/** The transport contract over UCX's TCP transport on loopback: RMA would be emulated there, so the bytes travel as active messages. */
class UcxTcpTransportTckTest extends UcxTransportTck {

	@BeforeAll
	static void needsUcx() {
		UcxTestSupport.assumeUcx();
	}

	@Override
	UcxKVTransport configured() {
		return UcxKVTransport.create().tls("tcp").netDevices("lo");
	}
}
