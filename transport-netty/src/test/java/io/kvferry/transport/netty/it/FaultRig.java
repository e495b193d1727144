package io.kvferry.transport.netty.it;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.UnaryOperator;

import io.kvferry.DisaggregationMode;
import io.kvferry.HostPort;
import io.kvferry.DecodeKVManager;
import io.kvferry.DecodeSpec;
import io.kvferry.KVManagerSpec;
import io.kvferry.ParallelLayout;
import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.kvferry.harness.KVCluster;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.transport.netty.NettyKVTransport;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.util.retry.Retry;

/**
 * Real parts on loopback for fault tests: a bootstrap server that can be restarted on its port, the reactive
 * bootstrap client, a Netty transport seen through a {@link RecordingTransport}, and a {@link KVCluster} of one prefill
 * DP group and one decode instance. Extra decode managers can join; closing the rig closes everything.
 */
final class FaultRig implements AutoCloseable {

	static final Duration T = Duration.ofSeconds(60);

	private volatile DisposableBootstrapServer server;
	final ReactorBootstrapClient client;
	final NettyKVTransport netty;
	final RecordingTransport transport;
	final KVCluster cluster;
	final ModelShape shape;
	private final int pages;
	private final int rows;
	private final UnaryOperator<KVManagerSpec<?, ?>> customize;
	private final List<DecodeKVManager> extra = new CopyOnWriteArrayList<>();

	private FaultRig(DisposableBootstrapServer server, ReactorBootstrapClient client, NettyKVTransport netty,
			RecordingTransport transport, KVCluster cluster, ModelShape shape, int pages, int rows,
			UnaryOperator<KVManagerSpec<?, ?>> customize) {
		this.server = server;
		this.client = client;
		this.netty = netty;
		this.transport = transport;
		this.cluster = cluster;
		this.shape = shape;
		this.pages = pages;
		this.rows = rows;
		this.customize = customize;
	}

	/**
	 * @param shape the model
	 * @param prefillTp prefill attention TP (one DP group, PP 1)
	 * @param decodeTp decode attention TP (PP 1)
	 * @param pages pages per layer buffer on every rank
	 * @param rows aux rows on every rank
	 * @param netty the transport every manager shares
	 * @param customize applied to every manager's spec
	 */
	static FaultRig start(ModelShape shape, int prefillTp, int decodeTp, int pages, int rows, NettyKVTransport netty,
			UnaryOperator<KVManagerSpec<?, ?>> customize) {
		DisposableBootstrapServer server = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		ReactorBootstrapClient client = ReactorBootstrapClient.create();
		RecordingTransport transport = new RecordingTransport(netty);
		KVCluster cluster;
		try {
			cluster = KVCluster.builder().shape(shape).prefill(prefillTp, 1, 1).decode(decodeTp, 1)
					.capacity(pages, rows).transport(transport).bootstrapClient(client)
					.bootstrapAddress(server.address()).customize(customize).startNow(T);
		}
		catch (RuntimeException e) {
			netty.disposeNow(T);
			client.dispose();
			server.disposeNow();
			throw e;
		}
		return new FaultRig(server, client, netty, transport, cluster, shape, pages, rows, customize);
	}

	/** @return the bootstrap server's address (stable across {@link #restartServer()}) */
	HostPort bootstrap() {
		return cluster.bootstrapAddress();
	}

	DisposableBootstrapServer server() {
		return server;
	}

	/** Stops the bootstrap server (it forgets every registration) without starting another. */
	void stopServer() {
		server.disposeNow();
	}

	/**
	 * Binds a new, empty bootstrap server on the same port as the stopped one (retrying the bind a few times while
	 * the old socket finishes closing).
	 */
	void startServerAgain() {
		HostPort address = bootstrap();
		server = Mono.fromCallable(() -> BootstrapServer.create().host(address.host()).port(address.port())
				.bindNow(Duration.ofSeconds(5)))
				// bindNow blocks: never on a parallel thread, where the retry's delay would run it.
				.subscribeOn(Schedulers.boundedElastic())
				.retryWhen(Retry.fixedDelay(20, Duration.ofMillis(250)))
				.block(T);
	}

	/**
	 * @return a new decode manager with this rig's transport and client and its own memory, closed with the rig
	 */
	DecodeKVManager startDecode(RankMemory memory, ParallelLayout layout, String name) {
		DecodeKVManager m = ((DecodeSpec) customize.apply(KVManagerSpec.decode().kvArgs(memory.kvArgs())
				.layout(layout).transport(transport).bootstrapClient(client).name(name))).startNow(T);
		extra.add(m);
		return m;
	}

	/** @return fresh decode memory of this rig's shape and capacity (TP {@code tp}, rank {@code rank}) */
	RankMemory decodeMemory(int tp, int rank) {
		return RankMemory.decode(shape, new ParallelLayout(tp, rank, 1, 0, 1, 0, 1, 0), pages, rows, rows);
	}

	@Override
	public void close() {
		extra.forEach(m -> m.disposeNow(T));
		cluster.close().block(T);
		netty.disposeNow(T);
		client.dispose();
		server.disposeNow();
	}
}
