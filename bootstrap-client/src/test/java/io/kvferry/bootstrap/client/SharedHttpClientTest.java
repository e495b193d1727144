package io.kvferry.bootstrap.client;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.SocketAddress;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;

import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.resolver.AddressResolverGroup;
import io.netty.util.concurrent.DefaultThreadFactory;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.netty.Connection;
import reactor.netty.ConnectionObserver;
import reactor.netty.http.client.HttpClient;
import reactor.netty.resources.ConnectionProvider;
import reactor.netty.transport.TransportConfig;
import reactor.test.StepVerifier;

/** A client given the caller's Reactor Netty client runs on its pool and loops and leaves them to the caller. */
class SharedHttpClientTest {

	private static final Duration T = Duration.ofSeconds(10);

	@Test
	void callsRunOnTheCallersClientWhoseResourcesOutliveTheBootstrapClient() {
		MultiThreadIoEventLoopGroup group = new MultiThreadIoEventLoopGroup(1,
				new DefaultThreadFactory("caller-http", true), NioIoHandler.newFactory());
		RecordingProvider provider = new RecordingProvider(ConnectionProvider.create("caller", 2));
		try (HttpStub stub = HttpStub.start(HttpStub.status(200, "OK"))) {
			AtomicReference<EventLoopGroup> ranOn = new AtomicReference<>();
			HttpClient caller = HttpClient.create(provider).runOn(group)
					.doOnConnected(c -> ranOn.set(c.channel().eventLoop().parent()));
			ReactorBootstrapClient client = ReactorBootstrapClient.create().httpClient(caller);

			StepVerifier.create(client.health(stub.address())).expectComplete().verify(T);
			assertThat(ranOn.get()).as("the call's connection ran on the caller's loops").isSameAs(group);
			assertThat(provider.acquired.get()).as("connections from the caller's pool").isPositive();

			client.dispose();
			assertThat(client.isDisposed()).isTrue();
			assertThat(provider.disposals.get()).as("the caller's pool is the caller's to close").isZero();
			assertThat(group.isShuttingDown()).isFalse();
			StepVerifier.create(ReactorBootstrapClient.create().httpClient(caller).health(stub.address()))
					.expectComplete().verify(T);
		}
		finally {
			provider.delegate.disposeLater().block(T);
			group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
		}
	}

	/** A pool that counts its acquisitions and any attempt to dispose it. */
	private static final class RecordingProvider implements ConnectionProvider {

		final ConnectionProvider delegate;
		final AtomicInteger acquired = new AtomicInteger();
		final AtomicInteger disposals = new AtomicInteger();

		RecordingProvider(ConnectionProvider delegate) {
			this.delegate = delegate;
		}

		@Override
		public Mono<? extends Connection> acquire(TransportConfig config, ConnectionObserver observer,
				Supplier<? extends SocketAddress> remoteAddress, AddressResolverGroup<?> resolverGroup) {
			acquired.incrementAndGet();
			return delegate.acquire(config, observer, remoteAddress, resolverGroup);
		}

		@Override
		public void dispose() {
			disposals.incrementAndGet();
			delegate.dispose();
		}

		@Override
		public Mono<Void> disposeLater() {
			return Mono.defer(() -> {
				disposals.incrementAndGet();
				return delegate.disposeLater();
			});
		}

		@Override
		public boolean isDisposed() {
			return delegate.isDisposed();
		}

		@Override
		public int maxConnections() {
			return delegate.maxConnections();
		}
	}
}
