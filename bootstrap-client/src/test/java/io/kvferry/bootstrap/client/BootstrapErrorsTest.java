package io.kvferry.bootstrap.client;

import java.io.IOException;
import java.net.ConnectException;
import java.net.NoRouteToHostException;
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
	private static final String ADDRESS = "bootstrap.example:8998";
	private static final Duration TIMEOUT = Duration.ofSeconds(5);

	@Test
	void unknownHostIsUnreachable() {
		BootstrapException failure = BootstrapErrors.fromFailure(CALL, ADDRESS, true, TIMEOUT,
				new UnknownHostException("failed to resolve 'bootstrap.example'"));

		assertThat(failure.kind()).isEqualTo(Kind.UNREACHABLE);
		assertThat(failure.status()).isZero();
		assertThat(failure.isRetryable()).isTrue();
		assertThat(failure.getMessage()).isEqualTo(CALL + ": cannot connect: unknown host: the name of " + ADDRESS
				+ " does not resolve (failed to resolve 'bootstrap.example')");
	}

	@Test
	void connectTimeoutIsATimeoutToConnectNotARefusal() {
		// Netty's ConnectTimeoutException is a ConnectException: only its words tell it from a refusal.
		BootstrapException failure = BootstrapErrors.fromFailure(CALL, ADDRESS, false, TIMEOUT,
				new ConnectTimeoutException("connection timed out after 5000 ms: bootstrap.example/10.0.0.5:8998"));

		assertThat(failure.kind()).isEqualTo(Kind.TIMEOUT);
		assertThat(failure.getMessage()).isEqualTo(CALL + ": could not connect within 5000 ms: " + ADDRESS
				+ " did not accept the connection in time (the host is down, or a firewall drops its packets)");
	}

	@Test
	void aCallThatTimedOutBeforeItHadAConnectionCouldNotConnect() {
		BootstrapException unopened = BootstrapErrors.fromFailure(CALL, ADDRESS, false, TIMEOUT,
				new TimeoutException("Did not observe any item or terminal signal within 5000ms"));
		BootstrapException unanswered = BootstrapErrors.fromFailure(CALL, ADDRESS, true, TIMEOUT,
				new TimeoutException("Did not observe any item or terminal signal within 5000ms"));

		assertThat(unopened.kind()).isEqualTo(Kind.TIMEOUT);
		assertThat(unopened.getMessage()).startsWith(CALL + ": could not connect within 5000 ms: " + ADDRESS
				+ " did not accept the connection in time");
		assertThat(unanswered.kind()).isEqualTo(Kind.TIMEOUT);
		assertThat(unanswered.getMessage()).isEqualTo(CALL + ": no answer within 5000 ms");
	}

	@Test
	void anUnreachableHostIsNamedAsSuchNotAsALostConnection() {
		// As Netty's epoll transport reports EHOSTUNREACH and ENETUNREACH: no message of its own, the address appended.
		BootstrapException failure = BootstrapErrors.fromFailure(CALL, ADDRESS, false, TIMEOUT,
				Exceptions.propagate(new NoRouteToHostException("null: /10.213.77.1:18998")));
		// As the JDK's sockets report it.
		BootstrapException jdk = BootstrapErrors.fromFailure(CALL, ADDRESS, false, TIMEOUT,
				new ConnectException("Network is unreachable"));

		assertThat(failure.kind()).isEqualTo(Kind.UNREACHABLE);
		assertThat(failure.isRetryable()).isTrue();
		assertThat(failure.getMessage()).isEqualTo(CALL + ": cannot connect: no route to host " + ADDRESS
				+ " (the host is down or its network is unreachable from here)").doesNotContain("null", "lost");
		assertThat(jdk.getMessage()).isEqualTo(failure.getMessage());
	}

	@Test
	void readAndOperatorTimeoutsAreTimeouts() {
		assertThat(BootstrapErrors.fromFailure(CALL, ADDRESS, true, TIMEOUT, ReadTimeoutException.INSTANCE).kind())
				.isEqualTo(Kind.TIMEOUT);
		assertThat(BootstrapErrors.fromFailure(CALL, ADDRESS, true, TIMEOUT, new TimeoutException()).kind()).isEqualTo(Kind.TIMEOUT);
	}

	@Test
	void lostConnectionsAreUnreachableEvenWhenWrapped() {
		BootstrapException refused = BootstrapErrors.fromFailure(CALL, ADDRESS, true, TIMEOUT,
				Exceptions.propagate(new ConnectException("Connection refused")));
		BootstrapException reset = BootstrapErrors.fromFailure(CALL, ADDRESS, true, TIMEOUT,
				new IllegalStateException("wrapper", new IOException("Connection reset by peer")));
		BootstrapException closed = BootstrapErrors.fromFailure(CALL, ADDRESS, true, TIMEOUT,
				new ClosedChannelException());

		assertThat(refused.kind()).isEqualTo(Kind.UNREACHABLE);
		assertThat(refused.getMessage()).isEqualTo(CALL + ": cannot connect: connection refused by " + ADDRESS
				+ " (nothing listens on that port, or a firewall rejects it)");
		assertThat(reset.kind()).isEqualTo(Kind.UNREACHABLE);
		assertThat(reset.getMessage()).isEqualTo(CALL + ": connection lost (Connection reset by peer)");
		assertThat(closed.kind()).isEqualTo(Kind.UNREACHABLE);
		assertThat(closed.getMessage()).isEqualTo(CALL + ": connection lost (ClosedChannelException)");
	}

	@Test
	void tlsFailuresAreOtherAndNotRetried() {
		BootstrapException untrusted = BootstrapErrors.fromFailure(CALL, ADDRESS, true, TIMEOUT,
				new SSLHandshakeException("PKIX path building failed"));
		BootstrapException plainPeer = BootstrapErrors.fromFailure(CALL, ADDRESS, true, TIMEOUT,
				new IllegalStateException("wrapper", new NotSslRecordException("not an SSL/TLS record: 485454502f")));

		assertThat(untrusted.kind()).isEqualTo(Kind.OTHER);
		assertThat(untrusted.isRetryable()).isFalse();
		assertThat(untrusted.getMessage()).isEqualTo(CALL + ": TLS handshake with " + ADDRESS
				+ " failed (PKIX path building failed)");
		assertThat(plainPeer.kind()).isEqualTo(Kind.OTHER);
		assertThat(plainPeer.getMessage()).isEqualTo(CALL + ": TLS handshake with " + ADDRESS
				+ " failed (not an SSL/TLS record: 485454502f)");
	}

	@Test
	void aTlsHandshakeTimeoutIsATimeout() {
		BootstrapException failure = BootstrapErrors.fromFailure(CALL, ADDRESS, true, TIMEOUT,
				new SslHandshakeTimeoutException("handshake timed out after 5000ms"));

		assertThat(failure.kind()).isEqualTo(Kind.TIMEOUT);
		assertThat(failure.isRetryable()).isTrue();
	}

	@Test
	void anythingElseIsOtherAndKeepsItsCause() {
		IllegalStateException cause = new IllegalStateException("bootstrap client disposed");

		BootstrapException failure = BootstrapErrors.fromFailure(CALL, ADDRESS, true, TIMEOUT, cause);

		assertThat(failure.kind()).isEqualTo(Kind.OTHER);
		assertThat(failure.isRetryable()).isFalse();
		assertThat(failure.getMessage()).isEqualTo(CALL + ": bootstrap client disposed");
		assertThat(failure.getCause()).isSameAs(cause);
	}

	@Test
	void aBootstrapExceptionPassesThroughUnchanged() {
		BootstrapException known = new BootstrapException(Kind.NOT_FOUND, 404, "GET x: 404");

		assertThat(BootstrapErrors.fromFailure(CALL, ADDRESS, true, TIMEOUT, known)).isSameAs(known);
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
