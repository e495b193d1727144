package io.kvferry.cli;

import java.time.Duration;

import io.kvferry.spi.KVTransport;
import io.kvferry.transport.netty.IoMode;
import io.kvferry.transport.netty.NettyKVTransport;
import io.kvferry.transport.netty.SameHost;

/**
 * kvferry's TCP transport, with its same-host ring where {@code sameHost} and both ranks run on one host.
 *
 * @param sameHost whether KV bytes may go through shared memory when the peer is on this host
 * @param io the socket I/O of the transports' event loops
 */
record NettyTransports(boolean sameHost, IoOptions io) implements TransportKind {

	@Override
	public NettyKVTransport create(Duration heartbeat) {
		return io.apply(NettyKVTransport.create().heartbeatInterval(heartbeat))
				.sameHost(sameHost ? SameHost.AUTO : SameHost.OFF);
	}

	@Override
	public String banner() {
		return (sameHost ? "shared memory when both ranks run on this host, else TCP" : "TCP")
				+ (io.mode() == IoMode.EPOLL ? "" : " (" + io.mode().label() + ")");
	}

	@Override
	public String describe(KVTransport transport) {
		NettyKVTransport t = (NettyKVTransport) transport;
		return t.sameHostConnections() > 0 ? "shared memory (same host)"
				: t.ioMode() == IoMode.EPOLL ? "TCP" : "TCP (" + t.ioMode().label() + ")";
	}

	@Override
	public void dispose(KVTransport transport) {
		((NettyKVTransport) transport).dispose();
	}
}
