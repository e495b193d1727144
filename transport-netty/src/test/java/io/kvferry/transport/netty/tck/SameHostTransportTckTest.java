package io.kvferry.transport.netty.tck;

import io.kvferry.spi.KVTransport;
import io.kvferry.transport.netty.NettyKVTransport;
import io.kvferry.transport.netty.SameHost;

/**
 * The transport contract with the same-host path on: data from the accepting side to the connecting one goes through a
 * shared-memory ring, everything else over TCP.
 */
class SameHostTransportTckTest extends NettyTransportTck {

	@Override
	NettyKVTransport configured() {
		return NettyKVTransport.create().sameHost(SameHost.AUTO);
	}

	@Override
	protected KVTransport createRefusedClient(KVTransport server) {
		return NettyKVTransport.create().sameHost(SameHost.AUTO).eventLoopThreads(1)
				.sharedSecret("a secret the listener does not have");
	}
}
