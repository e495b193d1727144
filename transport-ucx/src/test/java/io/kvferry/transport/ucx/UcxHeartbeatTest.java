package io.kvferry.transport.ucx;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import io.kvferry.HostPort;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.KVTransport;
import io.kvferry.test.RecordingHandler;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;

/**
 * Each side announces its heartbeat interval in the handshake and judges its peer by the peer's: a prefill at 500 ms
 * keeps an idle connection to a decode at 5 s open (it would drop it after 1 s by its own), and the connection still
 * carries messages afterwards.
 */
class UcxHeartbeatTest {

	private static final Duration T = Duration.ofSeconds(10);

	@BeforeAll
	static void needsUcx() {
		UcxTestSupport.assumeUcx();
	}

	@Test
	void sidesWithDifferentIntervalsKeepAnIdleConnection() throws Exception {
		// Intervals long enough that a heartbeat delayed by a loaded machine is not a dead peer: decode allows prefill
		// one interval (500 ms) of lateness.
		UcxKVTransport prefill = UcxTestSupport.tcp().heartbeatInterval(Duration.ofMillis(500));
		UcxKVTransport decode = UcxTestSupport.tcp().heartbeatInterval(Duration.ofSeconds(5));
		try {
			RecordingHandler accepted = new RecordingHandler();
			KVTransport.Listener listener = prefill.listen(new HostPort("127.0.0.1", 0), c -> accepted).block(T);
			RecordingHandler connected = new RecordingHandler();
			KVConnection connection = decode.connect(listener.address(), connected).block(T);
			// Six of prefill's intervals, three times what it would allow a peer judged by its own.
			assertThat(accepted.closed.await(3, TimeUnit.SECONDS)).as("prefill closed: %s", accepted.closes)
					.isFalse();
			assertThat(connected.closes).isEmpty();
			StepVerifier.create(connection.write(new KVMessage.AbortAck(3))).expectComplete().verify(T);
			assertThat(accepted.nextMessage(T)).isEqualTo(new KVMessage.AbortAck(3));
		}
		finally {
			prefill.disposeNow(T);
			decode.disposeNow(T);
		}
	}
}
