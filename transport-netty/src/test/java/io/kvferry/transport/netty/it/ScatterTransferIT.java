package io.kvferry.transport.netty.it;

import static io.kvferry.transport.netty.it.LoopbackCluster.T;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.Objects;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

import io.kvferry.DecodeSpec;
import io.kvferry.HostPort;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.kvferry.harness.KVCluster;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RoomResult;
import io.kvferry.spi.Block;
import io.kvferry.spi.ConnectionHandler;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVTransport;
import io.kvferry.spi.ScatterBlock;
import io.kvferry.test.ForwardingConnection;
import io.kvferry.transport.netty.NettyKVTransport;
import io.kvferry.transport.netty.SameHost;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import reactor.core.publisher.Mono;

/**
 * Page size 1 over real sockets on loopback: every token of every layer buffer is its own piece, pages are scattered
 * on both sides (runs of one to three tokens), so prefill sends almost everything as scatter frames, over two stripes.
 * Every byte is verified at decode (the harness's patterns), decode's ledger must find every granted byte landed
 * exactly once, and each stripe's CRC32C must match what landed on it. The prefill side counts what went as scatter
 * blocks, so the test fails if the frames were not used.
 * Over a same-host ring the same rooms go piece by piece through the ring's one-piece slot frames.
 */
class ScatterTransferIT {

	@ParameterizedTest(name = "P{0} <-> D{1} mla={2}")
	@CsvSource({ "1,1,false", "2,2,false", "1,2,false", "2,1,false", "1,1,true" })
	void pageSizeOneRoomsArriveByteExactThroughScatterFrames(int prefillTp, int decodeTp, boolean mla) {
		ModelShape shape = mla ? new ModelShape(4, 1, 576, 2, 1, true, 0, 64, 0)
				: ModelShape.llama3_8b().withLayers(4).withPageSize(1);
		NettyKVTransport netty = NettyKVTransport.create();
		Counting counting = run(shape, prefillTp, decodeTp, netty);
		assertThat(counting.scatterPieces.get()).as("pieces sent in scatter blocks")
				.isGreaterThan(10 * counting.singleBlocks.get());
	}

	/** On a same-host ring each piece of a scatter block goes as its own one-piece slot frame: still byte exact. */
	@Test
	void pageSizeOneRoomsArriveByteExactThroughTheSameHostRing() {
		NettyKVTransport netty = NettyKVTransport.create().sameHost(SameHost.AUTO);
		Counting counting = run(ModelShape.llama3_8b().withLayers(4).withPageSize(1), 1, 1, netty);
		assertThat(counting.scatterPieces.get()).isPositive();
		assertThat(netty.sameHostConnections()).as("connections through a ring").isPositive();
	}

	private static Counting run(ModelShape shape, int prefillTp, int decodeTp, NettyKVTransport netty) {
		DisposableBootstrapServer server = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		ReactorBootstrapClient client = ReactorBootstrapClient.create();
		Counting counting = new Counting(netty);
		KVCluster cluster = KVCluster.builder().shape(shape).prefill(prefillTp, 1, 1).decode(decodeTp, 1)
				.capacity(6000, 16).scatterRuns(3).transport(counting).bootstrapClient(client)
				.bootstrapAddress(server.address())
				// A CRC32C per stripe: what landed must be what each stripe was handed, in that order.
				.customize(spec -> spec instanceof DecodeSpec d ? d.checksums(true) : spec).startNow(T);
		try {
			Random random = new Random(prefillTp * 10 + decodeTp + shape.headDim());
			for (long room = 1; room <= 4; room++) {
				RoomResult r = cluster.run(room, 200 + random.nextInt(1000), 1 + random.nextInt(4), random).block(T);
				assertThat(r.failure()).as("room %d", room).isNull();
			}
			assertThat(cluster.freeDecodePages()).as("every page came back").isEqualTo(6000);
			return counting;
		}
		finally {
			cluster.close().block(T);
			netty.disposeNow(T);
			client.dispose();
			server.disposeNow();
		}
	}

	/** Netty's transport, its accepted connections (prefill's side) counting what they are asked to send. */
	private static final class Counting implements KVTransport {

		final KVTransport delegate;
		final AtomicLong scatterPieces = new AtomicLong();
		final AtomicLong singleBlocks = new AtomicLong();

		Counting(KVTransport delegate) {
			this.delegate = Objects.requireNonNull(delegate, "delegate");
		}

		@Override
		public Mono<Listener> listen(HostPort bindAddress, Function<KVConnection, ConnectionHandler> acceptor) {
			return delegate.listen(bindAddress, c -> acceptor.apply(new CountingConnection(c)));
		}

		@Override
		public Mono<KVConnection> connect(HostPort remote, ConnectionHandler handler) {
			return delegate.connect(remote, handler);
		}

		private final class CountingConnection extends ForwardingConnection {

			CountingConnection(KVConnection c) {
				super(c);
			}

			@Override
			public void send(Block block) {
				if (block instanceof ScatterBlock s) {
					scatterPieces.addAndGet(s.header().count());
				}
				else {
					singleBlocks.incrementAndGet();
				}
				delegate.send(block);
			}
		}
	}
}
