package io.kvferry.transport.ucx;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;

import io.kvferry.HostPort;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.KVTransport;
import io.kvferry.test.RecordingHandler;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

/**
 * How connections close. Both sides of a connection closing at once, as when a cluster's managers all close together:
 * a close asks the peer and waits for its answer, at most the handshake timeout; when the peer's own close arrived just
 * before (received, not yet delivered), this side's close must answer it, not ask: the peer takes it for its answer
 * and sends nothing more, so a question would wait out the whole timeout.
 *
 * <p>The timing is made, not hoped for: decode closes as soon as it receives prefill's message, so its close follows
 * its acknowledgement of that message on the wire, and prefill closes as soon as it hears the acknowledgement, which
 * is inside the same pass of UCX's progress that receives decode's close.
 *
 * <p>And a connection used after its transport stopped: its worker is freed, and nothing handed over may reach it.
 */
class UcxCloseTest {

	private static final Duration T = Duration.ofSeconds(10);
	/** Long, so that a close that waits it out fails the test by far. */
	private static final Duration LINGER = Duration.ofSeconds(60);
	private static final int CONNECTIONS = 16;
	private static final long CLOSE_NOW = Long.MAX_VALUE;

	@BeforeAll
	static void needsUcx() {
		UcxTestSupport.assumeUcx();
	}

	@Test
	void aCloseCrossingThePeersAnswersItInsteadOfWaitingOutTheTimeout() throws Exception {
		UcxKVTransport prefill = UcxTestSupport.tcp().handshakeTimeout(LINGER);
		UcxKVTransport decode = UcxTestSupport.tcp().handshakeTimeout(LINGER);
		try {
			List<RecordingHandler> acceptedSides = new CopyOnWriteArrayList<>();
			KVTransport.Listener listener = prefill.listen(new HostPort("127.0.0.1", 0), c -> {
				RecordingHandler h = new RecordingHandler();
				acceptedSides.add(h);
				return h;
			}).block(T);
			List<KVConnection> dialled = new ArrayList<>();
			for (int i = 0; i < CONNECTIONS; i++) {
				KVConnection c = Objects.requireNonNull(decode.connect(listener.address(), new ClosingOnCue())
						.block(T));
				// Its message makes the accepted side open too, and names the dialled end it belongs to.
				StepVerifier.create(c.write(new KVMessage.AbortAck(i))).expectComplete().verify(T);
				dialled.add(c);
			}
			KVConnection[] accepted = new KVConnection[CONNECTIONS];
			assertThat(acceptedSides).hasSize(CONNECTIONS);
			for (RecordingHandler h : acceptedSides) {
				KVMessage.AbortAck named = (KVMessage.AbortAck) h.nextMessage(T);
				accepted[(int) named.room()] = Objects.requireNonNull(h.connection);
			}

			long start = System.nanoTime();
			for (KVConnection p : accepted) {
				p.write(new KVMessage.AbortAck(CLOSE_NOW)).subscribe(null, e -> p.close("prefill closing"),
						() -> p.close("prefill closing"));
			}
			List<Mono<Void>> all = new ArrayList<>();
			dialled.forEach(c -> all.add(c.onClose()));
			for (KVConnection c : accepted) {
				all.add(c.onClose());
			}
			StepVerifier.create(Mono.when(all)).expectComplete().verify(LINGER.dividedBy(2));
			assertThat(Duration.ofNanos(System.nanoTime() - start)).as("every close ended")
					.isLessThan(LINGER.dividedBy(4));
		}
		finally {
			prefill.disposeNow(T);
			decode.disposeNow(T);
		}
	}

	@Test
	void aConnectionUsedAfterItsTransportStoppedIsRefusedQuietly() throws Exception {
		UcxKVTransport prefill = UcxTestSupport.tcp();
		UcxKVTransport decode = UcxTestSupport.tcp();
		KVConnection c;
		try {
			KVTransport.Listener listener = prefill.listen(new HostPort("127.0.0.1", 0), x -> new RecordingHandler())
					.block(T);
			c = Objects.requireNonNull(decode.connect(listener.address(), new RecordingHandler()).block(T));
		}
		finally {
			prefill.disposeNow(T);
			decode.disposeNow(T);
		}
		// Its worker is gone: what is handed over now must not reach it.
		c.close("closed late");
		StepVerifier.create(c.write(new KVMessage.AbortAck(1))).expectError().verify(T);
		StepVerifier.create(c.onClose()).expectComplete().verify(T);
	}

	/** Decode's side: closes as soon as the cue arrives. */
	private static final class ClosingOnCue extends RecordingHandler {
		@Override
		public void onMessage(KVConnection connection, KVMessage message) {
			super.onMessage(connection, message);
			if (message instanceof KVMessage.AbortAck a && a.room() == CLOSE_NOW) {
				connection.close("decode closing");
			}
		}
	}
}
