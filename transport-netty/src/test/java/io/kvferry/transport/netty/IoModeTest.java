package io.kvferry.transport.netty;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.stream.Collectors;

import io.kvferry.HostPort;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.kvferry.harness.KVCluster;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RoomResult;
import io.kvferry.test.RecordingHandler;
import io.kvferry.transport.netty.internal.LandingNioSocketChannel;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.uring.IoUring;
import io.netty.channel.uring.IoUringSocketChannel;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import reactor.test.StepVerifier;

/** Whole rooms over each I/O mode the transport offers, every byte checked. */
class IoModeTest {

	private static final Duration T = Duration.ofSeconds(30);
	// 32 KiB pages: contiguous rooms make frames large enough to land straight in registered memory, scattered rooms
	// many small frames.
	private static final ModelShape SHAPE = new ModelShape(2, 8, 128, 2, 16, false, 0, 64, 0);

	@ParameterizedTest
	@EnumSource(IoMode.class)
	void roomsMoveEveryByteOverEachIoMode(IoMode mode) {
		assumeAvailable(mode);
		ReactorBootstrapClient client = ReactorBootstrapClient.create();
		// Required: a mode that fell back would pass this test without being tested.
		NettyKVTransport prefill = NettyKVTransport.create().eventLoopThreads(2).ioMode(mode, true);
		NettyKVTransport decode = NettyKVTransport.create().eventLoopThreads(2).ioMode(mode, true);
		try {
			// Contiguous pages, scattered pages, and page size 1 in runs of up to 4 slots (the pieces of scatter frames,
			// which NIO reads straight into their pages).
			for (int layout = 0; layout < 3; layout++) {
				// A server per layout: the first registration of an instance fixes its page size.
				DisposableBootstrapServer server = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
				KVCluster cluster = KVCluster.builder().shape(layout == 2 ? SHAPE.withPageSize(1) : SHAPE)
						.prefill(2, 1, 1).decode(2, 1).capacity(layout == 2 ? 8192 : 512, 8).contiguous(layout == 0)
						.scatterRuns(layout == 2 ? 4 : 0).transport(prefill).decodeTransport(decode)
						.bootstrapClient(client).bootstrapAddress(server.address()).startNow(T);
				try {
					Random random = new Random(layout + 1);
					for (int room = 1; room <= 4; room++) {
						RoomResult result = cluster.run(room, 16 * 100 + room * 7, 3, random).block(T);
						assertThat(result.failure()).as(mode + " layout " + layout + " room " + room).isNull();
						assertThat(result.bytes()).isPositive();
					}
				}
				finally {
					cluster.close().block(T);
					server.disposeNow();
				}
			}
			assertThat(prefill.ioMode()).isEqualTo(mode);
			assertThat(decode.ioMode()).isEqualTo(mode);
		}
		finally {
			prefill.disposeNow(T);
			decode.disposeNow(T);
			client.dispose();
		}
	}

	@ParameterizedTest
	@EnumSource(IoMode.class)
	void connectionsRunOnTheChannelsOfTheMode(IoMode mode) throws Exception {
		assumeAvailable(mode);
		try (Loopback lo = Loopback.open(NettyKVTransport.create().eventLoopThreads(1).ioMode(mode, true),
				NettyKVTransport.create().eventLoopThreads(1).ioMode(mode, true))) {
			Class<?> expected = switch (mode) {
				case IO_URING -> IoUringSocketChannel.class;
				case EPOLL -> EpollSocketChannel.class;
				case NIO -> LandingNioSocketChannel.class;
			};
			assertThat(lo.accepted.channel()).isInstanceOf(expected);
			assertThat(lo.connected.channel()).isInstanceOf(expected);
		}
	}

	@Test
	void sharedLoopsTellTheirModeAndTransportsOnThemUseIt() {
		IoMode mode = IoUring.isAvailable() ? IoMode.IO_URING : IoMode.EPOLL;
		LoopResources loops = LoopResources.create("uring-loops", 1, IoMode.IO_URING, false);
		try {
			assertThat(loops.ioMode()).isEqualTo(Epoll.isAvailable() || mode == IoMode.IO_URING ? mode : IoMode.NIO);
			assertThat(loops.toString()).isEqualTo("LoopResources{uring-loops, " + loops.ioMode().label() + "}");
			NettyKVTransport transport = NettyKVTransport.create().loopResources(loops);
			StepVerifier.create(transport.listen(new HostPort("127.0.0.1", 0), c -> new RecordingHandler()))
					.expectNextCount(1).expectComplete().verify(T);
			assertThat(transport.ioMode()).isEqualTo(loops.ioMode());
			transport.disposeNow(T);
		}
		finally {
			loops.disposeLater().block(T);
		}
	}

	@Test
	void theBootstrapServerAndClientStayOnEpollWithIoUringOnTheClassPath() {
		assumeAvailable(IoMode.IO_URING);
		assumeAvailable(IoMode.EPOLL);
		Set<Long> before = Thread.getAllStackTraces().keySet().stream().map(Thread::getId).collect(Collectors.toSet());
		DisposableBootstrapServer server = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		ReactorBootstrapClient client = ReactorBootstrapClient.create();
		try {
			StepVerifier.create(client.health(server.address())).expectComplete().verify(T);
			List<String> all = Thread.getAllStackTraces().keySet().stream().map(Thread::getName).toList();
			List<String> started = Thread.getAllStackTraces().keySet().stream()
					.filter(t -> !before.contains(t.getId())).map(Thread::getName).toList();
			// Reactor Netty's own loops would be io_uring here: the server's and the client's are Epoll.
			assertThat(started).as("threads started for the server and the call")
					.anyMatch(n -> n.startsWith("kvferry-bootstrap-epoll"))
					.noneMatch(n -> n.contains("io_uring"));
			assertThat(all).as("the bootstrap client's loop")
					.anyMatch(n -> n.startsWith("kvferry-http-bootstrap-client-epoll"));
		}
		finally {
			client.dispose();
			server.disposeNow();
		}
	}

	private static void assumeAvailable(IoMode mode) {
		if (mode == IoMode.IO_URING) {
			Assumptions.assumeTrue(IoUring.isAvailable(), () -> "io_uring unavailable here: "
					+ IoUring.unavailabilityCause());
		}
		if (mode == IoMode.EPOLL) {
			Assumptions.assumeTrue(Epoll.isAvailable(), () -> "epoll unavailable here: " + Epoll.unavailabilityCause());
		}
	}
}
