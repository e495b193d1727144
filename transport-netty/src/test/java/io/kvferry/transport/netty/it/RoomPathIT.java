package io.kvferry.transport.netty.it;

import static io.kvferry.transport.netty.it.LiveRoom.range;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.function.UnaryOperator;

import io.kvferry.DecodeSpec;
import io.kvferry.FailureCause;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVReceiver;
import io.kvferry.KVTransferException;
import io.kvferry.RoomPath;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.kvferry.harness.KVCluster;
import io.kvferry.harness.ModelShape;
import io.kvferry.transport.netty.NettyKVTransport;
import io.kvferry.transport.netty.SameHost;
import io.kvferry.transport.netty.TestTls;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;

/**
 * A room says how it travelled (TCP with its stripes, the same-host ring, TLS), and a decode rank that requires a path
 * fails rooms that would take another, naming both, instead of falling back.
 */
class RoomPathIT {

	private static final Duration T = Duration.ofSeconds(60);
	private static final ModelShape SHAPE = ModelShape.llama3_8b().withLayers(2);

	@Test
	void aTcpRoomSaysTcpWithItsStripes() {
		RoomPath path = roomPath(NettyKVTransport.create(), UnaryOperator.identity());
		assertThat(path).isEqualTo(new RoomPath(RoomPath.Kind.TCP, DecodeSpec.DEFAULT_STRIPES, false));
		assertThat(path.toString()).isEqualTo("TCP with " + DecodeSpec.DEFAULT_STRIPES + " stripes");
		assertThat(path.tag()).isEqualTo("tcp");
	}

	@Test
	void aSameHostRoomSaysSharedMemoryAndMeetsTheRequirement() {
		RoomPath path = roomPath(NettyKVTransport.create().sameHost(SameHost.AUTO),
				spec -> spec instanceof DecodeSpec d ? d.requirePath(RoomPath.Requirement.SHARED_MEMORY) : spec);
		assertThat(path.kind()).isEqualTo(RoomPath.Kind.SHARED_MEMORY);
		assertThat(path.tls()).isFalse();
	}

	@Test
	void aTlsRoomSaysTlsAndMeetsTheRequirement() {
		RoomPath path = roomPath(NettyKVTransport.create().secure(TestTls.server(), TestTls.client()),
				spec -> spec instanceof DecodeSpec d ? d.requirePath(RoomPath.Requirement.TLS) : spec);
		assertThat(path).isEqualTo(new RoomPath(RoomPath.Kind.TCP, DecodeSpec.DEFAULT_STRIPES, true));
		assertThat(path.tag()).isEqualTo("tcp_tls");
	}

	@Test
	void requiringSharedMemoryFromAPeerThatOnlyDoesTcpFailsTheRoomNamingBothPaths() {
		// Decode offers the ring; the prefill rank's transport keeps TCP.
		NettyKVTransport prefill = NettyKVTransport.create();
		NettyKVTransport decode = NettyKVTransport.create().sameHost(SameHost.AUTO);
		try (Cluster c = Cluster.start(prefill, decode,
				spec -> spec instanceof DecodeSpec d ? d.requirePath(RoomPath.Requirement.SHARED_MEMORY) : spec)) {
			LiveRoom room = c.open(1);
			KVReceiver receiver = room.receivers.get(0);
			StepVerifier.create(receiver.completion())
					.expectErrorSatisfies(e -> {
						assertThat(e).isInstanceOf(KVTransferException.class);
						assertThat(((KVTransferException) e).failureCause()).isEqualTo(FailureCause.INCOMPATIBLE);
						assertThat(e.getMessage()).contains("requires shared memory")
								.contains("is TCP with " + DecodeSpec.DEFAULT_STRIPES + " stripes");
					})
					.verify(T);
			StepVerifier.create(room.senders.get(0).completion()).expectError().verify(T);
		}
	}

	@Test
	void requiringTlsOverPlainTcpFailsTheRoom() {
		NettyKVTransport netty = NettyKVTransport.create();
		try (Cluster c = Cluster.start(netty, netty,
				spec -> spec instanceof DecodeSpec d ? d.requirePath(RoomPath.Requirement.TLS) : spec)) {
			LiveRoom room = c.open(1);
			StepVerifier.create(room.receivers.get(0).completion())
					.expectErrorSatisfies(e -> assertThat(e.getMessage()).contains("requires TLS")
							.contains("is TCP with"))
					.verify(T);
		}
	}

	/** @return the path of one room that succeeded byte-exact over {@code netty} */
	private static RoomPath roomPath(NettyKVTransport netty, UnaryOperator<KVManagerSpec<?, ?>> customize) {
		try (Cluster c = Cluster.start(netty, netty, customize)) {
			LiveRoom room = c.open(1);
			room.sendAll();
			StepVerifier.create(room.completion()).expectComplete().verify(T);
			assertThat(room.verify()).isNull();
			return room.receivers.get(0).path();
		}
	}

	/** One prefill rank and one decode rank on loopback, each on its own transport, with a bootstrap server. */
	private record Cluster(DisposableBootstrapServer server, ReactorBootstrapClient client, KVCluster cluster,
			List<NettyKVTransport> transports) implements AutoCloseable {

		static Cluster start(NettyKVTransport prefill, NettyKVTransport decode,
				UnaryOperator<KVManagerSpec<?, ?>> customize) {
			DisposableBootstrapServer server = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
			ReactorBootstrapClient client = ReactorBootstrapClient.create();
			KVCluster cluster = KVCluster.builder().shape(SHAPE).prefill(1, 1, 1).decode(1, 1).capacity(32, 4)
					.transport(prefill).decodeTransport(decode).bootstrapClient(client)
					.bootstrapAddress(server.address()).customize(customize).startNow(T);
			return new Cluster(server, client, cluster, prefill == decode ? List.of(prefill) : List.of(prefill, decode));
		}

		LiveRoom open(long id) {
			int[] pages = range(0, 8);
			return LiveRoom.open(cluster.bootstrapAddress(), id, cluster.prefillManagers().get(0),
					cluster.prefillMemory().get(0), cluster.decodeManagers(), cluster.decodeMemory(), pages, pages, 0,
					0);
		}

		@Override
		public void close() {
			cluster.close().block(T);
			transports.forEach(t -> t.disposeNow(T));
			client.dispose();
			server.disposeNow();
		}
	}
}
