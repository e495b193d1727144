package io.kvferry.transport.netty.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

import io.kvferry.DecodeKVManager;
import io.kvferry.HostPort;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.ParallelLayout;
import io.kvferry.PrefillKVManager;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.spi.ConnectionHandler;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVTransport;
import io.kvferry.test.InMemoryBootstrap;
import io.kvferry.transport.netty.NettyKVTransport;
import io.kvferry.transport.netty.internal.NettyKVConnection;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

/**
 * A prefill and a decode whose transports have different heartbeat intervals, over loopback TCP: each side judges the
 * other by the interval the other announced, so connections idle for several of the longer intervals stay up (the side
 * with the shorter interval hears three of the other's heartbeats on each of them) and the next room succeeds over the
 * same connections. Judged by its own shorter interval instead, that side would drop every idle connection after two of
 * its own intervals, before the other side's first heartbeat.
 */
class HeartbeatMismatchIT {

	private static final Duration T = Duration.ofSeconds(30);
	private static final ModelShape SHAPE = new ModelShape(2, 2, 16, 2, 4, false, 0, 0, 0);
	private static final HostPort BOOTSTRAP = new HostPort("127.0.0.1", 8998);
	/** Heartbeats from the side of the longer interval that the other side must hear on each idle connection. */
	private static final int HEARD = 3;

	@ParameterizedTest(name = "prefill {0} ms, decode {1} ms")
	@CsvSource({ "400, 1200", "1200, 400" })
	void idleConnectionsBetweenDifferentIntervalsStayUpAndServeTheNextRoom(long prefillMillis, long decodeMillis) {
		NettyKVTransport prefillNetty = NettyKVTransport.create().eventLoopThreads(1)
				.heartbeatInterval(Duration.ofMillis(prefillMillis));
		NettyKVTransport decodeNetty = NettyKVTransport.create().eventLoopThreads(1)
				.heartbeatInterval(Duration.ofMillis(decodeMillis));
		List<NettyKVConnection> accepted = new CopyOnWriteArrayList<>();
		List<NettyKVConnection> dialled = new CopyOnWriteArrayList<>();
		InMemoryBootstrap bootstrap = new InMemoryBootstrap();
		RankMemory prefillMem = RankMemory.prefill(SHAPE, ParallelLayout.SINGLE, 8, 0, 0);
		RankMemory decodeMem = RankMemory.decode(SHAPE, ParallelLayout.SINGLE, 8, 0, 0);
		PrefillKVManager prefill = KVManagerSpec.prefill().kvArgs(prefillMem.kvArgs())
				.transport(listening(prefillNetty, accepted)).bootstrapClient(bootstrap).bootstrapAddress(BOOTSTRAP)
				.bindAddress(new HostPort("127.0.0.1", 0)).startNow();
		DecodeKVManager decode = KVManagerSpec.decode().kvArgs(decodeMem.kvArgs())
				.transport(dialling(decodeNetty, dialled)).bootstrapClient(bootstrap).startNow();
		try {
			room(prefill, decode, prefillMem, decodeMem, 1);
			int connections = accepted.size();
			assertThat(connections).isPositive();
			assertThat(dialled).hasSize(connections);

			// The side with the shorter interval is the one that would drop the other: it must hear the other's
			// heartbeats, several intervals of the longer one, on every connection.
			List<NettyKVConnection> judging = prefillMillis < decodeMillis ? accepted : dialled;
			String outcome = Mono.firstWithValue(heard(judging).thenReturn("kept"), firstClose(accepted, dialled))
					.block(T);
			assertThat(outcome).isEqualTo("kept");
			assertThat(accepted).allMatch(NettyKVConnection::isActive);
			assertThat(dialled).allMatch(NettyKVConnection::isActive);

			room(prefill, decode, prefillMem, decodeMem, 2);
			assertThat(accepted).as("the same connections served the next room").hasSize(connections);
		}
		finally {
			decode.disposeNow(T);
			prefill.disposeNow(T);
			decodeNetty.disposeNow(T);
			prefillNetty.disposeNow(T);
		}
	}

	private static void room(PrefillKVManager prefill, DecodeKVManager decode, RankMemory prefillMem,
			RankMemory decodeMem, long room) {
		int[] pages = { (int) room };
		KVReceiver receiver = decode.receiver(BOOTSTRAP, room);
		receiver.sendMetadata(pages, -1, new int[0]);
		KVSender sender = prefill.sender(room);
		sender.init(1, -1);
		prefillMem.fill(room, pages, -1, new int[0]);
		sender.send(pages, new int[0]);
		StepVerifier.create(Mono.when(sender.completion(), receiver.completion())).expectComplete().verify(T);
		assertThat(decodeMem.verify(room, pages, -1, new int[0])).isNull();
	}

	/** @return completes once each connection received {@link #HEARD} heartbeats from here on */
	private static Mono<Void> heard(List<NettyKVConnection> connections) {
		CompletableFuture<Void> all = new CompletableFuture<>();
		AtomicInteger waiting = new AtomicInteger(connections.size());
		for (NettyKVConnection c : connections) {
			AtomicInteger count = new AtomicInteger();
			c.channel().pipeline().addLast(new ChannelInboundHandlerAdapter() {
				@Override
				public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
					if (evt == NettyKVConnection.HEARTBEAT_RECEIVED && count.incrementAndGet() == HEARD
							&& waiting.decrementAndGet() == 0) {
						all.complete(null);
					}
					ctx.fireUserEventTriggered(evt);
				}
			});
		}
		return Mono.fromFuture(all);
	}

	/** @return the reason of the first of these connections to close */
	private static Mono<String> firstClose(List<NettyKVConnection> accepted, List<NettyKVConnection> dialled) {
		return Flux.concat(Flux.fromIterable(accepted), Flux.fromIterable(dialled))
				.flatMap(c -> c.onClose().then(Mono.fromSupplier(() -> "closed: " + c + ": " + c.closeReason())))
				.next();
	}

	private static KVTransport listening(NettyKVTransport netty, List<NettyKVConnection> accepted) {
		return new KVTransport() {
			@Override
			public Mono<Listener> listen(HostPort bindAddress, Function<KVConnection, ConnectionHandler> acceptor) {
				return netty.listen(bindAddress, c -> {
					accepted.add((NettyKVConnection) c);
					return acceptor.apply(c);
				});
			}

			@Override
			public Mono<KVConnection> connect(HostPort remote, ConnectionHandler handler) {
				return netty.connect(remote, handler);
			}
		};
	}

	private static KVTransport dialling(NettyKVTransport netty, List<NettyKVConnection> dialled) {
		return new KVTransport() {
			@Override
			public Mono<Listener> listen(HostPort bindAddress, Function<KVConnection, ConnectionHandler> acceptor) {
				return netty.listen(bindAddress, acceptor);
			}

			@Override
			public Mono<KVConnection> connect(HostPort remote, ConnectionHandler handler) {
				return netty.connect(remote, handler).doOnNext(c -> dialled.add((NettyKVConnection) c));
			}
		};
	}
}
