package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

import io.kvferry.DecodeKVManager;
import io.kvferry.HostPort;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.KVTransferException;
import io.kvferry.ParallelLayout;
import io.kvferry.PrefillKVManager;
import io.kvferry.bootstrap.BootstrapClient;
import io.kvferry.bootstrap.PrefillParallelInfo;
import io.kvferry.bootstrap.PrefillRegistration;
import io.kvferry.spi.ConnectionHandler;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVTransport;
import io.kvferry.test.InMemoryBootstrap;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.transport.local.InMemoryKVTransport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

/**
 * Every step of a room's bootstrap on decode ends by itself, well before the room's own Bootstrapping timeout (disabled
 * here, so that a step that never ends would hold the room for ever): a transport whose connect never completes is cut
 * at the handshake timeout on the manager's timer, and a registry look-up that answers nothing fails the room at once.
 * Either way the room names the step, and the next room starts afresh instead of waiting on what the first one
 * waited on.
 */
class BootstrapStepBoundsTest {

	private static final Duration T = Duration.ofSeconds(10);
	// Every room's handshake runs under it, the served room's too: long enough that a busy machine's handshake fits.
	private static final Duration HANDSHAKE = Duration.ofSeconds(1);
	private static final ModelShape SHAPE = new ModelShape(2, 2, 16, 2, 4, false, 0, 64, 0);
	private static final HostPort BOOTSTRAP = new HostPort("127.0.0.1", 8998);

	private final InMemoryKVTransport transport = InMemoryKVTransport.create();
	private final Registry registry = new Registry();
	private final RankMemory prefillMem = RankMemory.prefill(SHAPE, ParallelLayout.SINGLE, 8, 2, 2);
	private final RankMemory decodeMem = RankMemory.decode(SHAPE, ParallelLayout.SINGLE, 8, 2, 2);
	private PrefillKVManager prefill;
	private DecodeKVManager decode;

	private void start(KVTransport decodeTransport) {
		prefill = KVManagerSpec.prefill().kvArgs(prefillMem.kvArgs()).transport(transport).bootstrapClient(registry)
				.bootstrapAddress(BOOTSTRAP).bindAddress(new HostPort("127.0.0.1", 0)).startNow();
		decode = KVManagerSpec.decode().kvArgs(decodeMem.kvArgs()).transport(decodeTransport)
				.bootstrapClient(registry).handshakeTimeout(HANDSHAKE).bootstrapTimeout(Duration.ZERO).startNow();
	}

	@AfterEach
	void stop() {
		if (prefill != null) {
			prefill.disposeNow(T);
		}
		if (decode != null) {
			decode.disposeNow(T);
		}
	}

	/** A room whose pages prefill sends: it must succeed with every byte. */
	private void served(long room) {
		int[] src = { (int) room % 8 };
		int[] dst = { (int) (room + 3) % 8 };
		prefillMem.fill(room, src, 0, new int[0]);
		KVReceiver receiver = decode.receiver(BOOTSTRAP, room);
		receiver.sendMetadata(dst, 1, new int[0]);
		KVSender sender = prefill.sender(room);
		sender.init(1, 0);
		sender.send(src, new int[0]);
		StepVerifier.create(receiver.completion()).expectComplete().verify(T);
		assertThat(decodeMem.verify(room, dst, 1, new int[0])).isNull();
	}

	/** A room that must fail on its own, without prefill doing anything for it. */
	private void failsNaming(long room, String... parts) {
		KVReceiver receiver = decode.receiver(BOOTSTRAP, room);
		receiver.sendMetadata(new int[] { 5 }, 1, new int[0]);
		StepVerifier.create(receiver.completion())
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(KVTransferException.class)
						.hasMessageContainingAll(parts))
				.verify(T);
	}

	@Test
	void aConnectThatNeverCompletesFailsTheRoomAtTheHandshakeTimeoutAndTheNextRoomConnectsAnew() {
		// The first connect is handed to nobody, as to an event loop that never runs it: it never signals.
		Wrapped stalling = new Wrapped(transport, attempt -> attempt == 1);
		start(stalling);
		HostPort rank = prefill.endpoint();
		long began = System.nanoTime();
		failsNaming(1, "prefill rank " + rank + " could not be connected to within " + HANDSHAKE);
		assertThat(Duration.ofNanos(System.nanoTime() - began)).as("cut at the handshake timeout")
				.isGreaterThanOrEqualTo(HANDSHAKE);
		assertThat(stalling.cancelled).as("the stalled connect is given up, not left to connect later").isTrue();
		served(2);
		// Room 2 connected anew: stripe 0 and the stripe that joins it.
		assertThat(stalling.attempts.get()).isEqualTo(1 + 2);
	}

	@Test
	void anEndpointLookUpThatAnswersNothingFailsTheRoomAtOnceAndTheNextRoomLooksItUpAgain() {
		registry.emptyEndpoints.set(1);
		start(transport);
		failsNaming(1, "answered nothing for prefill rank dp 0 cp 0 tp 0 pp 0 of " + BOOTSTRAP);
		served(2);
		assertThat(registry.endpoints.get()).isEqualTo(2);
	}

	@Test
	void aParallelInfoLookUpThatAnswersNothingFailsTheRoomAtOnceAndTheNextRoomFetchesItAgain() {
		registry.emptySizes.set(1);
		start(transport);
		failsNaming(1, "answered nothing for the parallel info of " + BOOTSTRAP);
		served(2);
		assertThat(registry.sizes.get()).isEqualTo(2);
	}

	/** The in-memory registry, answering the first few look-ups with nothing at all (no value, no error). */
	private static final class Registry implements BootstrapClient {
		final InMemoryBootstrap delegate = new InMemoryBootstrap();
		final AtomicInteger emptySizes = new AtomicInteger();
		final AtomicInteger emptyEndpoints = new AtomicInteger();
		final AtomicInteger sizes = new AtomicInteger();
		final AtomicInteger endpoints = new AtomicInteger();

		@Override
		public Mono<Void> register(HostPort bootstrap, PrefillRegistration registration) {
			return delegate.register(bootstrap, registration);
		}

		@Override
		public Mono<PrefillParallelInfo> parallelInfo(HostPort bootstrap) {
			return Mono.defer(() -> {
				sizes.incrementAndGet();
				return emptySizes.getAndDecrement() > 0 ? Mono.empty() : delegate.parallelInfo(bootstrap);
			});
		}

		@Override
		public Mono<HostPort> rankEndpoint(HostPort bootstrap, int dpGroup, int tpRank, int ppRank) {
			return rankEndpoint(bootstrap, dpGroup, 0, tpRank, ppRank);
		}

		@Override
		public Mono<HostPort> rankEndpoint(HostPort bootstrap, int dpGroup, int cpRank, int tpRank, int ppRank) {
			return Mono.defer(() -> {
				endpoints.incrementAndGet();
				return emptyEndpoints.getAndDecrement() > 0 ? Mono.empty()
						: delegate.rankEndpoint(bootstrap, dpGroup, cpRank, tpRank, ppRank);
			});
		}

		@Override
		public Mono<Void> health(HostPort bootstrap) {
			return delegate.health(bootstrap);
		}
	}

	/** A transport whose connects the test may swallow: a swallowed one never signals, as a stalled one. */
	private static final class Wrapped implements KVTransport {
		private final KVTransport delegate;
		private final Function<Integer, Boolean> swallow;
		final AtomicInteger attempts = new AtomicInteger();
		final AtomicBoolean cancelled = new AtomicBoolean();

		Wrapped(KVTransport delegate, Function<Integer, Boolean> swallow) {
			this.delegate = delegate;
			this.swallow = swallow;
		}

		@Override
		public Mono<Listener> listen(HostPort bindAddress, Function<KVConnection, ConnectionHandler> acceptor) {
			return delegate.listen(bindAddress, acceptor);
		}

		@Override
		public Mono<KVConnection> connect(HostPort remote, ConnectionHandler handler) {
			return Mono.defer(() -> swallow.apply(attempts.incrementAndGet())
					? Mono.<KVConnection>never().doOnCancel(() -> cancelled.set(true))
					: delegate.connect(remote, handler));
		}
	}
}
