package io.kvferry.spi;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.UnresolvedAddressException;
import java.util.concurrent.TimeoutException;

import javax.net.ssl.SSLHandshakeException;

import org.junit.jupiter.api.Test;

/**
 * Connect failures in the forms sockets report them (Netty's epoll and NIO transports, the JDK's sockets, gRPC's
 * wrappers), each named for what it is.
 */
class ConnectFailureTest {

	private static final String ADDRESS = "10.213.77.1:18998";

	@Test
	void anUnreachableHostAsNettysEpollTransportReportsItIsNoRouteNotALostConnection() {
		// Netty maps EHOSTUNREACH and ENETUNREACH to a NoRouteToHostException without a message, then appends the address.
		NoRouteToHostException netty = new NoRouteToHostException("null: /" + ADDRESS);

		assertThat(ConnectFailure.of(netty)).isEqualTo(ConnectFailure.NO_ROUTE);
		assertThat(ConnectFailure.of(new NoRouteToHostException())).isEqualTo(ConnectFailure.NO_ROUTE);
		assertThat(ConnectFailure.NO_ROUTE.describe(ADDRESS, netty)).isEqualTo("no route to host " + ADDRESS
				+ " (the host is down or its network is unreachable from here)");
	}

	@Test
	void theJdksWordsForAnUnreachableHostOrNetworkAreNoRouteToo() {
		assertThat(ConnectFailure.of(new ConnectException("Network is unreachable"))).isEqualTo(ConnectFailure.NO_ROUTE);
		assertThat(ConnectFailure.of(new SocketException("Host is unreachable"))).isEqualTo(ConnectFailure.NO_ROUTE);
		assertThat(ConnectFailure.of(new ConnectException("connect(..) failed with error(-113): No route to host")))
				.isEqualTo(ConnectFailure.NO_ROUTE);
	}

	@Test
	void aRefusalIsARefusalWrappedOrNot() {
		ConnectException refused = new ConnectException("connect(..) failed with error(-111): Connection refused");

		assertThat(ConnectFailure.of(new IllegalStateException("io exception", refused)))
				.isEqualTo(ConnectFailure.REFUSED);
		assertThat(ConnectFailure.REFUSED.describe(ADDRESS, refused)).isEqualTo("connection refused by " + ADDRESS
				+ " (nothing listens on that port, or a firewall rejects it)");
	}

	@Test
	void aConnectTimeoutIsATimeoutThoughItIsAConnectException() {
		// Netty's ConnectTimeoutException and the kernel's ETIMEDOUT are ConnectExceptions.
		assertThat(ConnectFailure.of(new ConnectException("connection timed out after 3000 ms: /" + ADDRESS)))
				.isEqualTo(ConnectFailure.TIMED_OUT);
		assertThat(ConnectFailure.of(new SocketTimeoutException("Connect timed out")))
				.isEqualTo(ConnectFailure.TIMED_OUT);
		assertThat(ConnectFailure.TIMED_OUT.describe(ADDRESS, new SocketTimeoutException())).isEqualTo(ADDRESS
				+ " did not accept the connection in time (the host is down, or a firewall drops its packets)");
	}

	@Test
	void anUnresolvableNameIsAnUnknownHost() {
		UnknownHostException dns = new UnknownHostException("failed to resolve 'prefill-a.invalid'");

		assertThat(ConnectFailure.of(dns)).isEqualTo(ConnectFailure.UNKNOWN_HOST);
		assertThat(ConnectFailure.of(new UnresolvedAddressException())).isEqualTo(ConnectFailure.UNKNOWN_HOST);
		assertThat(ConnectFailure.UNKNOWN_HOST.describe("prefill-a.invalid:8998", dns)).isEqualTo("unknown host: the "
				+ "name of prefill-a.invalid:8998 does not resolve (failed to resolve 'prefill-a.invalid')");
	}

	@Test
	void aTlsFailureQuotesItsCauseBounded() {
		SSLHandshakeException tls = new SSLHandshakeException("not an SSL/TLS record: " + "48".repeat(500));

		assertThat(ConnectFailure.of(new IOException("wrapped", tls))).isEqualTo(ConnectFailure.TLS);
		assertThat(ConnectFailure.TLS.describe(ADDRESS, new IOException("wrapped", tls)))
				.startsWith("TLS handshake with " + ADDRESS + " failed (not an SSL/TLS record: 4848")
				.endsWith("...)")
				.hasSizeLessThan(250);
	}

	@Test
	void anotherConnectExceptionIsAFailureToConnectWithItsWords() {
		ConnectException odd = new ConnectException("connect(..) failed with error(-98): Address already in use");

		assertThat(ConnectFailure.of(odd)).isEqualTo(ConnectFailure.FAILED);
		assertThat(ConnectFailure.FAILED.describe(ADDRESS, odd)).isEqualTo("cannot connect to " + ADDRESS
				+ " (connect(..) failed with error(-98): Address already in use)");
	}

	@Test
	void failuresAfterTheConnectionOpenedAreNoConnectFailures() {
		assertThat(ConnectFailure.of(new IOException("Connection reset by peer"))).isNull();
		assertThat(ConnectFailure.of(new ClosedChannelException())).isNull();
		assertThat(ConnectFailure.of(new TimeoutException("no answer"))).isNull();
		assertThat(ConnectFailure.of(new SocketException("Broken pipe"))).isNull();
		assertThat(ConnectFailure.of(new SocketTimeoutException("Read timed out"))).isNull();
	}

	@Test
	void aCauseChainThatLoopsEnds() {
		IOException a = new IOException("a");
		IOException b = new IOException("b", a);
		a.initCause(b);

		assertThat(ConnectFailure.of(b)).isNull();
	}
}
