package io.kvferry.bootstrap.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import io.kvferry.bootstrap.server.RawHttp.Answer;
import io.kvferry.bootstrap.server.RawHttp.Mode;
import io.netty.channel.EventLoopGroup;
import io.netty.util.concurrent.EventExecutor;
import org.junit.jupiter.api.Test;
import reactor.netty.http.HttpResources;

/**
 * The server runs on event loops of its own: when every thread of Reactor Netty's shared loops is stalled (by HTTP
 * clients or any other code in the same JVM, as when an embedding engine's callbacks deadlocked there), the registry
 * still answers.
 */
class BootstrapServerOwnLoopsTest {

	private static final byte[] HEALTH = "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
			.getBytes(StandardCharsets.US_ASCII);

	@Test
	void answersWhileEveryThreadOfTheSharedEventLoopsIsStalled() throws Exception {
		DisposableBootstrapServer server = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		// Both of Reactor Netty's shared server groups: native (Epoll) and NIO, whichever servers would take.
		List<EventExecutor> loops = new ArrayList<>();
		for (EventLoopGroup shared : List.of(HttpResources.get().onServer(true), HttpResources.get().onServer(false))) {
			shared.forEach(loops::add);
		}
		CountDownLatch stalled = new CountDownLatch(loops.size());
		// Busy rather than parked (BlockHound rejects parking, and even Thread.onSpinWait, on an event loop): a busy
		// loop is what a stuck callback looks like to the server.
		AtomicBoolean release = new AtomicBoolean();
		try {
			for (EventExecutor loop : loops) {
				loop.execute(() -> {
					stalled.countDown();
					while (!release.get()) {
						// Re-reads the flag until the test ends the stall.
					}
				});
			}
			assertThat(stalled.await(10, TimeUnit.SECONDS)).as("every shared loop thread stalled").isTrue();

			Answer answer = RawHttp.exchange(server.address().port(), HEALTH, Mode.WHOLE);
			assertThat(answer.status()).as(answer.preview()).isEqualTo(200);
			assertThat(answer.body()).isEqualTo("OK");
		}
		finally {
			release.set(true);
			server.disposeNow(Duration.ofSeconds(5));
		}
	}

	@Test
	void servesOnItsOwnThreadsAndStopsThemWithTheServer() throws InterruptedException {
		// Other tests' servers may still be stopping theirs.
		List<Thread> before = ownThreads();
		DisposableBootstrapServer server = BootstrapServer.create().host("127.0.0.1").port(0).ioThreads(2).bindNow();
		List<Thread> own;
		try {
			assertThat(RawHttp.exchange(server.address().port(), HEALTH, Mode.WHOLE).status()).isEqualTo(200);
			own = new ArrayList<>(ownThreads());
			own.removeAll(before);
			assertThat(own).as("the server's own loop threads").hasSizeBetween(1, 2);
		}
		finally {
			server.disposeNow(Duration.ofSeconds(5));
		}
		for (Thread t : own) {
			t.join(10_000);
		}
		assertThat(own).as("loop threads left after disposal").noneMatch(Thread::isAlive);
	}

	@Test
	void ioThreadsIsAtLeastOne() {
		assertThat(BootstrapServer.create().ioThreads()).isEqualTo(BootstrapServer.DEFAULT_IO_THREADS);
		assertThat(BootstrapServer.create().ioThreads(3).ioThreads()).isEqualTo(3);
		assertThatThrownBy(() -> BootstrapServer.create().ioThreads(0))
				.isInstanceOf(IllegalArgumentException.class).hasMessage("ioThreads : 0 (expected: >= 1)");
	}

	private static List<Thread> ownThreads() {
		return Thread.getAllStackTraces().keySet().stream()
				.filter(t -> t.isAlive() && t.getName().startsWith("kvferry-bootstrap")).toList();
	}
}
