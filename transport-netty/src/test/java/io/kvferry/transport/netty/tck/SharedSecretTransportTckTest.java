package io.kvferry.transport.netty.tck;

import io.kvferry.spi.KVTransport;
import io.kvferry.transport.netty.NettyKVTransport;

/** The transport contract with a shared secret; the handshake refuses a peer that proves another secret. */
class SharedSecretTransportTckTest extends NettyTransportTck {

	@Override
	NettyKVTransport configured() {
		return NettyKVTransport.create().sharedSecret("tck-secret");
	}

	@Override
	protected KVTransport createRefusedClient(KVTransport server) {
		return NettyKVTransport.create().eventLoopThreads(1).sharedSecret("another-secret");
	}
}
