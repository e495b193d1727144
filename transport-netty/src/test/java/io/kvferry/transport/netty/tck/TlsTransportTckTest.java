package io.kvferry.transport.netty.tck;

import io.kvferry.spi.KVTransport;
import io.kvferry.transport.netty.NettyKVTransport;
import io.kvferry.transport.netty.TestTls;

/** The transport contract over TLS; the handshake refuses a peer that does not trust the listener's certificate. */
class TlsTransportTckTest extends NettyTransportTck {

	@Override
	NettyKVTransport configured() {
		return NettyKVTransport.create().secure(TestTls.server(), TestTls.client());
	}

	@Override
	protected KVTransport createRefusedClient(KVTransport server) {
		return NettyKVTransport.create().eventLoopThreads(1).secure(TestTls.server(), TestTls.clientTrustingAStranger());
	}
}
