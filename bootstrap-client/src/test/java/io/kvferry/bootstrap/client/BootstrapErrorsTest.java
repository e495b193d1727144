package io.kvferry.bootstrap.client;

import java.io.IOException;
import java.net.ConnectException;
import java.net.UnknownHostException;
import java.nio.channels.ClosedChannelException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeoutException;

import javax.net.ssl.SSLHandshakeException;

import io.kvferry.bootstrap.BootstrapException;
import io.kvferry.bootstrap.BootstrapException.Kind;
import io.netty.channel.ConnectTimeoutException;
import io.netty.handler.ssl.NotSslRecordException;
import io.netty.handler.ssl.SslHandshakeTimeoutException;
import io.netty.handler.timeout.ReadTimeoutException;
import org.junit.jupiter.api.Test;
import reactor.core.Exceptions;

import static org.assertj.core.api.Assertions.assertThat;

/** How {@link BootstrapErrors} classifies answers and transport failures that sockets cannot easily provoke. */
class BootstrapErrorsTest {

	private static final String CALL = "GET http://bootstrap.example:8998/health";
	private static final Duration TIMEOUT = Duration.ofSeconds(5);

	@Test
	void unknownHostIsUnreachable() {
		BootstrapException failure = BootstrapErrors.fromFailure(CALL, TIMEOUT,
				new UnknownHostException("failed to resolve 'bootstrap.example'"));

		assertThat(failure.kind()).isEqualTo(Kind.UNREACHABLE);
		assertThat(failure.status()).isZero();
		assertThat(failure.isRetryable()).isTrue();
		assertThat(failure.getMessage()).isEqualTo(CALL + ": unknown host (failed to resolve 'bootstrap.example')");
	}

	@Test
	void connectTimeoutIsATimeoutNotAConnectFailure() {
		BootstrapException failure = BootstrapErrors.fromFailure(CALL, TIMEOUT,
				new ConnectTimeoutException("connection timed out"));

		assertThat(failure.kind()).isEqualTo(Kind.TIMEOUT);
		assertThat(failure.getMessage()).isEqualTo(CALL + ": no answer within 5000 ms");
	}

	@Test
	void readAndOperatorTimeoutsAreTimeouts() {
		assertThat(BootstrapErrors.fromFailure(CALL, TIMEOUT, ReadTimeoutException.INSTANCE).kind())
				.isEqualTo(Kind.TIMEOUT);
		assertThat(BootstrapErrors.fromFailure(CALL, TIMEOUT, new TimeoutException()).kind()).isEqualTo(Kind.TIMEOUT);
	}

	@Test
	void lostConnectionsAreUnreachableEvenWhenWrapped() {
		BootstrapException refused = BootstrapErrors.fromFailure(CALL, TIMEOUT,
				Exceptions.propagate(new ConnectException("Connection refused")));
		BootstrapException reset = BootstrapErrors.fromFailure(CALL, TIMEOUT,
				new IllegalStateException("wrapper", new IOException("Connection reset by peer")));
		BootstrapException closed = BootstrapErrors.fromFailure(CALL, TIMEOUT,
				new ClosedChannelException());

		assertThat(refused.kind()).isEqualTo(Kind.UNREACHABLE);
		assertThat(refused.getMessage()).isEqualTo(CALL + ": cannot connect (Connection refused)");
		assertThat(reset.kind()).isEqualTo(Kind.UNREACHABLE);
		assertThat(reset.getMessage()).isEqualTo(CALL + ": connection lost (Connection reset by peer)");
		assertThat(closed.kind()).isEqualTo(Kind.UNREACHABLE);
		assertThat(closed.getMessage()).isEqualTo(CALL + ": connection lost (ClosedChannelException)");
	}

	@Test
	void tlsFailuresAreOtherAndNotRetried() {
		BootstrapException untrusted = BootstrapErrors.fromFailure(CALL, TIMEOUT,
				new SSLHandshakeException("PKIX path building failed"));
		BootstrapException plainPeer = BootstrapErrors.fromFailure(CALL, TIMEOUT,
				new IllegalStateException("wrapper", new NotSslRecordException("not an SSL/TLS record: 485454502f")));

		assertThat(untrusted.kind()).isEqualTo(Kind.OTHER);
		assertThat(untrusted.isRetryable()).isFalse();
		assertThat(untrusted.getMessage()).isEqualTo(CALL + ": TLS failed (PKIX path building failed)");
		assertThat(plainPeer.kind()).isEqualTo(Kind.OTHER);
		assertThat(plainPeer.getMessage()).isEqualTo(CALL + ": TLS failed (not an SSL/TLS record: 485454502f)");
	}

	@Test
	void aTlsHandshakeTimeoutIsATimeout() {
		BootstrapException failure = BootstrapErrors.fromFailure(CALL, TIMEOUT,
				new SslHandshakeTimeoutException("handshake timed out after 5000ms"));

		assertThat(failure.kind()).isEqualTo(Kind.TIMEOUT);
		assertThat(failure.isRetryable()).isTrue();
	}

	@Test
	void anythingElseIsOtherAndKeepsItsCause() {
		IllegalStateException cause = new IllegalStateException("bootstrap client disposed");

		BootstrapException failure = BootstrapErrors.fromFailure(CALL, TIMEOUT, cause);

		assertThat(failure.kind()).isEqualTo(Kind.OTHER);
		assertThat(failure.isRetryable()).isFalse();
		assertThat(failure.getMessage()).isEqualTo(CALL + ": bootstrap client disposed");
		assertThat(failure.getCause()).isSameAs(cause);
	}

	@Test
	void aBootstrapExceptionPassesThroughUnchanged() {
		BootstrapException known = new BootstrapException(Kind.NOT_FOUND, 404, "GET x: 404");

		assertThat(BootstrapErrors.fromFailure(CALL, TIMEOUT, known)).isSameAs(known);
	}

	@Test
	void statusMessagesQuoteTheServerOnOneBoundedLine() {
		byte[] body = ("line one\r\nline two\t" + "x".repeat(2000)).getBytes(StandardCharsets.UTF_8);

		BootstrapException failure = BootstrapErrors.fromStatus(CALL, 400, "Bad Request", body);

		assertThat(failure.kind()).isEqualTo(Kind.BAD_REQUEST);
		assertThat(failure.getMessage()).startsWith(CALL + ": 400 Bad Request: line one  line two x")
				.endsWith("...")
				.doesNotContain("\n", "\r", "\t")
				.hasSizeLessThan(CALL.length() + BootstrapErrors.MAX_QUOTED_CHARS + 40);
	}

	@Test
	void anEmptyErrorBodyLeavesOnlyTheStatusLine() {
		BootstrapException failure = BootstrapErrors.fromStatus(CALL, 502, "Bad Gateway", new byte[0]);

		assertThat(failure.kind()).isEqualTo(Kind.OTHER);
		assertThat(failure.isRetryable()).isTrue();
		assertThat(failure.getMessage()).isEqualTo(CALL + ": 502 Bad Gateway");
	}
}
