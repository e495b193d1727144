package io.kvferry.examples.snippets;

import java.time.Duration;

import io.kvferry.DecodeKVManager;
import io.kvferry.HostPort;
import io.kvferry.KVArgs;
import io.kvferry.KVManagerSpec;
import io.kvferry.ParallelLayout;
import io.kvferry.PrefillKVManager;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.kvferry.transport.netty.NettyKVTransport;

/**
 * What most examples start from, as {@link FirstRoom} builds it: a bootstrap server embedded on 127.0.0.1, one
 * prefill and one decode manager over one TCP transport, every port free. Closing it disposes all of them, bounded.
 */
final class Pair implements AutoCloseable {

	static final Duration TIMEOUT = Duration.ofSeconds(30);

	final DisposableBootstrapServer bootstrap;
	final NettyKVTransport transport;
	final ReactorBootstrapClient client;
	final KVArgs prefillArgs = Cache.args();
	final KVArgs decodeArgs = Cache.args();
	PrefillKVManager prefill;
	DecodeKVManager decode;

	private Pair(NettyKVTransport transport) {
		this.bootstrap = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		this.transport = transport;
		this.client = ReactorBootstrapClient.create();
	}

	/** @return a started prefill rank of a TP 2 instance, registered with {@code bootstrap}; the caller closes it */
	static PrefillKVManager tp2PrefillRank(int tpRank, HostPort bootstrap, NettyKVTransport transport,
			ReactorBootstrapClient client) {
		return KVManagerSpec.prefill()
				.kvArgs(Cache.args())
				.layout(ParallelLayout.tp(2, tpRank))
				.transport(transport)
				.bootstrapClient(client)
				.bootstrapAddress(bootstrap)
				.bindAddress(new HostPort("127.0.0.1", 0))
				.startNow(TIMEOUT);
	}

	/** @return a started pair over {@code transport} (closed with the pair) */
	static Pair start(NettyKVTransport transport) {
		Pair pair = new Pair(transport);
		try {
			pair.prefill = KVManagerSpec.prefill()
					.kvArgs(pair.prefillArgs)
					.transport(transport)
					.bootstrapClient(pair.client)
					.bootstrapAddress(pair.bootstrap.address())
					.bindAddress(new HostPort("127.0.0.1", 0))
					.startNow(TIMEOUT);
			pair.decode = KVManagerSpec.decode()
					.kvArgs(pair.decodeArgs)
					.transport(transport)
					.bootstrapClient(pair.client)
					.startNow(TIMEOUT);
			return pair;
		}
		catch (RuntimeException e) {
			pair.close();
			throw e;
		}
	}

	@Override
	public void close() {
		if (decode != null) {
			decode.disposeNow(TIMEOUT);
		}
		if (prefill != null) {
			prefill.disposeNow(TIMEOUT);
		}
		transport.disposeNow(TIMEOUT);
		client.dispose();
		bootstrap.disposeNow();
	}
}
