package io.kvferry.transport.netty.tck;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvferry.spi.KVTransport;
import io.kvferry.transport.netty.NettyKVTransport;
import io.kvferry.transport.netty.SameHost;
import io.kvferry.transport.netty.internal.NettyKVConnection;

/**
 * The transport contract with the same-host path on: data from the accepting side to the connecting one goes through a
 * shared-memory ring, everything else over TCP.
 */
class SameHostTransportTckTest extends NettyTransportTck {

	@Override
	NettyKVTransport configured() {
		return NettyKVTransport.create().sameHost(SameHost.AUTO);
	}

	/** Every link of the contract runs with the ring in use on both sides, not over a silent fallback to TCP. */
	@Override
	protected Link link() throws Exception {
		Link link = super.link();
		assertThat(((NettyKVConnection) link.connected()).sameHostActive()).as("decode reads from a ring").isTrue();
		assertThat(((NettyKVConnection) link.accepted()).sameHostActive()).as("prefill writes to a ring").isTrue();
		return link;
	}

	@Override
	protected KVTransport createRefusedClient(KVTransport server) {
		return NettyKVTransport.create().sameHost(SameHost.AUTO).eventLoopThreads(1)
				.sharedSecret("a secret the listener does not have");
	}
}
