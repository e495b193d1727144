package io.kvferry.transport.netty.it;

import java.time.Duration;
import java.util.function.UnaryOperator;

import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.kvferry.harness.KVCluster;
import io.kvferry.harness.KVClusterBuilder;
import io.kvferry.harness.ModelShape;
import io.kvferry.transport.netty.NettyKVTransport;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;

/**
 * Real parts on loopback for end-to-end tests: a bootstrap server on port 0, the reactive bootstrap client, the Netty
 * transport, and a {@link KVCluster} of managers on top. Closing it closes everything.
 */
final class LoopbackCluster implements AutoCloseable {

	static final Duration T = Duration.ofSeconds(60);

	final DisposableBootstrapServer server;
	final ReactorBootstrapClient client;
	final NettyKVTransport transport;
	// The decode side's transport: the same as the prefill side's unless started apart.
	final NettyKVTransport decodeTransport;
	final KVCluster cluster;

	private LoopbackCluster(DisposableBootstrapServer server, ReactorBootstrapClient client, NettyKVTransport transport,
			NettyKVTransport decodeTransport, KVCluster cluster) {
		this.server = server;
		this.client = client;
		this.transport = transport;
		this.decodeTransport = decodeTransport;
		this.cluster = cluster;
	}

	static LoopbackCluster start(ModelShape shape, int prefillTp, int prefillPp, int prefillDp, int decodeTp,
			int decodePp, int pages, int rows, UnaryOperator<KVClusterBuilder> more) {
		DisposableBootstrapServer server = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		ReactorBootstrapClient client = ReactorBootstrapClient.create();
		NettyKVTransport transport = NettyKVTransport.create();
		KVCluster cluster = more.apply(KVCluster.builder().shape(shape).prefill(prefillTp, prefillPp, prefillDp)
				.decode(decodeTp, decodePp).capacity(pages, rows).transport(transport).bootstrapClient(client)
				.bootstrapAddress(server.address())).startNow(T);
		return new LoopbackCluster(server, client, transport, transport, cluster);
	}

	/**
	 * One prefill and one decode rank whose transports have event loops of their own, as they do in their own
	 * processes: what one side's loop does (writing a large room) never delays the other side's reads.
	 */
	static LoopbackCluster startApart(ModelShape shape, int pages, int rows) {
		return startApart(shape, pages, rows, UnaryOperator.identity());
	}

	static LoopbackCluster startApart(ModelShape shape, int pages, int rows, UnaryOperator<KVClusterBuilder> more) {
		DisposableBootstrapServer server = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		ReactorBootstrapClient client = ReactorBootstrapClient.create();
		NettyKVTransport prefill = NettyKVTransport.create();
		NettyKVTransport decode = NettyKVTransport.create();
		KVCluster cluster = more.apply(KVCluster.builder().shape(shape).prefill(1, 1, 1).decode(1, 1)
				.capacity(pages, rows).transport(prefill).decodeTransport(decode).bootstrapClient(client)
				.bootstrapAddress(server.address())).startNow(T);
		return new LoopbackCluster(server, client, prefill, decode, cluster);
	}

	@Override
	public void close() {
		cluster.close().block(T);
		transport.disposeNow(T);
		if (decodeTransport != transport) {
			decodeTransport.disposeNow(T);
		}
		client.dispose();
		server.disposeNow();
	}
}
