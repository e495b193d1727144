package io.kvferry.transport.netty.tck;

import io.kvferry.spi.KVTransport;
import io.kvferry.transport.netty.NettyKVTransport;

/** The transport contract over plain TCP; the handshake refuses a peer that wants a shared secret. */
class PlainTcpTransportTckTest extends NettyTransportTck {

	@Override
	NettyKVTransport configured() {
		return NettyKVTransport.create();
	}

	@Override
	protected KVTransport createRefusedClient(KVTransport server) {
		return NettyKVTransport.create().eventLoopThreads(1).sharedSecret("a secret the listener does not have");
	}
}
