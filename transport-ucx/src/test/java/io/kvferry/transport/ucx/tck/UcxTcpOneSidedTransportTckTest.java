package io.kvferry.transport.ucx.tck;

import io.kvferry.transport.ucx.UcxDataPath;
import io.kvferry.transport.ucx.UcxKVTransport;
import io.kvferry.transport.ucx.UcxTestSupport;
import org.junit.jupiter.api.BeforeAll;

/** The transport contract over UCX's TCP transport with one-sided reads asked for (UCX emulates them): the read path's contract over a network transport. */
class UcxTcpOneSidedTransportTckTest extends UcxTransportTck {

	@BeforeAll
	static void needsUcx() {
		UcxTestSupport.assumeUcx();
	}

	@Override
	UcxKVTransport configured() {
		return UcxKVTransport.create().tls("tcp").netDevices("lo").dataPath(UcxDataPath.ONE_SIDED);
	}
}
