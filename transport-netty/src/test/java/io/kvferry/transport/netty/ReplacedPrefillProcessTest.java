package io.kvferry.transport.netty;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;

import io.kvferry.DecodeKVManager;
import io.kvferry.FailureCause;
import io.kvferry.KVManagerSpec;
import io.kvferry.ParallelLayout;
import io.kvferry.bootstrap.BootstrapFields;
import io.kvferry.bootstrap.PrefillRegistration;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.kvferry.harness.RankMemory;
import io.kvferry.test.Child;
import io.kvferry.transport.netty.RestartLoad.Outcome;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import reactor.core.Disposable;
import reactor.core.publisher.Sinks;

/**
 * A prefill process paused (SIGSTOP) and replaced by a new one, then resumed and registered again while the new one is
 * paused in turn: decode never goes back to the old process. Every room asked after the new one stopped fails, the
 * look-ups that answer the old process refused as {@link FailureCause#PEER_RESTARTED}; none is served by it.
 */
@Timeout(300)
class ReplacedPrefillProcessTest {

	private static final Duration HEARTBEAT = Duration.ofSeconds(1);
	private static final Duration START = Duration.ofSeconds(60);
	private static final Duration T = Duration.ofSeconds(30);
	/** Refused look-ups to see before the test ends: the old process had as many chances to be taken back. */
	private static final int REFUSALS = 20;

	@Test
	void aReplacedPrefillThatRegistersAgainAfterAPauseNeverGetsARoom() throws Exception {
		DisposableBootstrapServer bootstrap = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		RankMemory memory = RestartLoad.decodeMemory();
		ReactorBootstrapClient registry = ReactorBootstrapClient.create();
		DecodeKVManager decode = KVManagerSpec.decode().kvArgs(memory.kvArgs())
				.transport(RestartLoad.transport(HEARTBEAT)).bootstrapClient(registry).stripes(1).startNow();
		Sinks.Many<Outcome> outcomes = Sinks.many().replay().all();
		Disposable load = RestartLoad.decode(decode, memory, bootstrap.address(), 1)
				.subscribe(o -> outcomes.emitNext(o, Sinks.EmitFailureHandler.busyLooping(T)));
		try (Child old = prefill("old", bootstrap)) {
			Child.Seen oldReady = old.awaitSeen("^ready (\\d+) (\\w+)$", START);
			servedAfter(outcomes, oldReady.nanos());
			old.suspend();
			try (Child replacement = prefill("replacement", bootstrap)) {
				Child.Seen newReady = replacement.awaitSeen("^ready (\\d+) (\\w+)$", START);
				// Decode reaches the replacement once its connection to the paused process went silent.
				servedAfter(outcomes, newReady.nanos());
				old.resume();
				replacement.suspend();
				long paused = System.nanoTime();
				// The old process, resumed, registers again (it would by itself within its re-registration interval).
				registry.register(bootstrap.address(), PrefillRegistration.prefill(ParallelLayout.SINGLE, "127.0.0.1",
						Integer.parseInt(oldReady.match().group(1)), RestartLoad.SHAPE.pageSize())
						.withIncarnation(Long.parseUnsignedLong(oldReady.match().group(2), 16))).block(T);
				List<Outcome> refused = outcomes.asFlux()
						.filter(o -> o.startNanos() > paused && o.cause() == FailureCause.PEER_RESTARTED)
						.take(REFUSALS).collectList().block(T);
				assertThat(refused).hasSize(REFUSALS).allSatisfy(o -> assertThat(o.reason())
						.contains("showed incarnation " + incarnation(oldReady))
						.contains("was replaced by " + incarnation(newReady)).contains("never taken back"));
				List<Outcome> after = outcomes.asFlux().take(Duration.ofMillis(100))
						.filter(o -> o.startNanos() > paused).collectList().block(T);
				assertThat(after).as("rooms asked after the replacement stopped").noneMatch(Outcome::ok);
				replacement.kill();
			}
			old.kill();
		}
		finally {
			load.dispose();
			decode.disposeNow(Duration.ofSeconds(10));
			bootstrap.disposeNow();
		}
	}

	private static Child prefill(String name, DisposableBootstrapServer bootstrap) throws Exception {
		return Child.startMain(name, RestartPeerMain.class, "prefill", bootstrap.address().toString(), "0",
				String.valueOf(HEARTBEAT.toMillis()));
	}

	/** @return the incarnation a ready line printed, as reasons name it (16 hex digits) */
	private static String incarnation(Child.Seen ready) {
		return BootstrapFields.incarnationText(Long.parseUnsignedLong(ready.match().group(2), 16));
	}

	private static void servedAfter(Sinks.Many<Outcome> outcomes, long nanos) {
		assertThat(outcomes.asFlux().filter(o -> o.ok() && o.startNanos() > nanos).next().block(T)).isNotNull();
	}
}
