package io.kvferry.transport.ucx.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.EnumSet;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import io.kvferry.DecodeKVManager;
import io.kvferry.FailureCause;
import io.kvferry.KVSender;
import io.kvferry.KVTransferException;
import io.kvferry.PrefillKVManager;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.kvferry.test.Child;
import io.kvferry.transport.ucx.UcxKVTransport;
import io.kvferry.transport.ucx.UcxTestSupport;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import reactor.core.publisher.Mono;

/**
 * A process killed with SIGKILL while rooms are in flight both ways over UCX: this JVM runs a prefill rank the other
 * process's decode asks a room of, and a decode rank that asks the other process's prefill for a room; both engines
 * hold their rooms. Once the other process is killed, both rooms here fail, naming the lost peer, within two
 * heartbeat intervals (plus a quarter interval, how often a side looks, and slack for a loaded machine). Over shared
 * memory UCX reports no failure of its own (its shared-memory transports offer no peer failure handling): the
 * heartbeats find the silence. Over TCP UCX's peer failure handling may report the reset sooner.
 */
@Timeout(120)
class UcxDeadPeerProcessTest {

	private static final Duration HEARTBEAT = Duration.ofSeconds(1);
	private static final Duration BOUND = HEARTBEAT.multipliedBy(2).plus(HEARTBEAT.dividedBy(4)).plusMillis(750);
	private static final Duration START = Duration.ofSeconds(60);
	private static final Duration T = Duration.ofSeconds(30);
	private static final Set<FailureCause> PEER_WENT = EnumSet.of(FailureCause.CONNECTION_LOST);

	@BeforeAll
	static void needsUcx() {
		UcxTestSupport.assumeUcx();
	}

	@ParameterizedTest(name = "{0}")
	@ValueSource(strings = { "posix,cma,self", "tcp" })
	void roomsOnBothSidesFailWithinTwoHeartbeatIntervalsOfTheKill(String tls) throws Exception {
		DisposableBootstrapServer theirs = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		DisposableBootstrapServer ours = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		UcxKVTransport transport = HoldingRanks.transport(tls, HEARTBEAT);
		ReactorBootstrapClient client = ReactorBootstrapClient.create();
		CompletableFuture<KVSender> asked = new CompletableFuture<>();
		PrefillKVManager prefill = HoldingRanks.holdingPrefill(transport, client, ours.address(), asked::complete);
		DecodeKVManager decode = HoldingRanks.decode(transport, client);
		try (Child other = Child.startMain("ucx-peer", UcxPeerMain.class, tls, String.valueOf(HEARTBEAT.toMillis()),
				theirs.address().toString(), ours.address().toString(), "2")) {
			other.awaitLine("^ready$", START);
			KVSender held = asked.get(T.toMillis(), TimeUnit.MILLISECONDS);
			assertThat(held.room()).as("their decode asked our prefill").isEqualTo(2);
			CompletableFuture<Long> prefillRoom = failedAt(held.completion());
			CompletableFuture<Long> decodeRoom = failedAt(HoldingRanks.ask(decode, theirs.address(), 1).completion());
			other.awaitLine("^holding 1$", T);

			long killed = System.nanoTime();
			other.kill();
			for (var room : new Object[][] { { "prefill's room 2", prefillRoom }, { "decode's room 1", decodeRoom } }) {
				@SuppressWarnings("unchecked")
				long failed = ((CompletableFuture<Long>) room[1]).get(T.toMillis(), TimeUnit.MILLISECONDS);
				Duration after = Duration.ofNanos(failed - killed);
				System.out.printf(Locale.ROOT, "%s over %s failed %d ms after the kill (heartbeat %d ms)%n", room[0],
						tls, after.toMillis(), HEARTBEAT.toMillis());
				assertThat(after).as("%s failed after the kill", room[0]).isLessThanOrEqualTo(BOUND);
			}
		}
		finally {
			prefill.disposeNow(T);
			decode.disposeNow(T);
			transport.disposeNow(T);
			client.dispose();
			theirs.disposeNow();
			ours.disposeNow();
		}
	}

	/** @return when the room failed because its peer went ({@link System#nanoTime()}) */
	private static CompletableFuture<Long> failedAt(Mono<Void> completion) {
		CompletableFuture<Long> at = new CompletableFuture<>();
		completion.subscribe(v -> {
		}, e -> {
			if (e instanceof KVTransferException k && PEER_WENT.contains(k.failureCause())) {
				at.complete(System.nanoTime());
			}
			else {
				at.completeExceptionally(new AssertionError("the room failed otherwise: " + e, e));
			}
		}, () -> at.completeExceptionally(new AssertionError("the room succeeded, though nothing was sent")));
		return at;
	}
}
