package io.kvferry.registry.etcd;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.nio.channels.UnresolvedAddressException;
import java.time.Duration;
import java.util.concurrent.CompletionException;

import javax.net.ssl.SSLHandshakeException;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.kvferry.bootstrap.BootstrapException;
import org.junit.jupiter.api.Test;

/** Which etcd failures a call retries until its timeout, and which it reports at once. */
class EtcdErrorsTest {

	@Test
	void aMembersConnectionClosingUnderTheCallIsTransient() {
		// What a register right after killing the leader got: the client's channel to that member closed mid-call.
		StatusRuntimeException closed = Status.UNKNOWN.withDescription("channel closed").asRuntimeException();
		assertThat(EtcdErrors.isTransient(new CompletionException(closed))).isTrue();
	}

	@Test
	void leaderChangesAndUnreachableMembersAreTransientATlsFailureIsNot() {
		assertThat(EtcdErrors.isTransient(Status.UNAVAILABLE.withDescription("io exception").asRuntimeException()))
				.isTrue();
		assertThat(EtcdErrors.isTransient(Status.UNKNOWN.withDescription("etcdserver: leader changed")
				.asRuntimeException())).isTrue();
		assertThat(EtcdErrors.isTransient(Status.UNAVAILABLE.withCause(new SSLHandshakeException("bad certificate"))
				.asRuntimeException())).isFalse();
		assertThat(EtcdErrors.isTransient(Status.UNKNOWN.withDescription("etcdserver: key is not provided")
				.asRuntimeException())).isFalse();
	}

	private static final EtcdErrors.Access PLAIN = new EtcdErrors.Access("[http://10.0.0.1:2379]", null, null, "kvferry");
	private static final String CALL = "parallel info of prefill-a:8998";

	@Test
	void anUnreachableMemberIsNamedWithTheAddressDialledNotAsABareStatus() {
		// As gRPC reports what Netty's epoll transport found: EHOSTUNREACH has no message, the address is appended.
		StatusRuntimeException noRoute = Status.UNAVAILABLE.withDescription("io exception")
				.withCause(new NoRouteToHostException("null: /10.0.0.1:2379")).asRuntimeException();

		BootstrapException failure = EtcdErrors.map(CALL, PLAIN, Duration.ofSeconds(5), noRoute);

		assertThat(failure.kind()).isEqualTo(BootstrapException.Kind.UNREACHABLE);
		assertThat(failure.getMessage()).isEqualTo(CALL + " on etcd [http://10.0.0.1:2379]: cannot connect: no route to "
				+ "host 10.0.0.1:2379 (the host is down or its network is unreachable from here)");
		assertThat(EtcdErrors.isTransient(noRoute)).isTrue();
	}

	@Test
	void aCallThatKeptFailingToConnectGivesUpNamingTheLastFailure() {
		StatusRuntimeException refused = Status.UNAVAILABLE.withDescription("io exception")
				.withCause(new ConnectException("Connection refused: /10.0.0.1:2379")).asRuntimeException();
		StatusRuntimeException unresolved = Status.UNAVAILABLE.withDescription("unresolved address")
				.withCause(new UnresolvedAddressException()).asRuntimeException();

		BootstrapException gaveUp = EtcdErrors.gaveUp(refused, Duration.ofSeconds(5), PLAIN);
		BootstrapException unknown = EtcdErrors.gaveUp(unresolved, Duration.ofSeconds(5), PLAIN);

		assertThat(gaveUp.kind()).isEqualTo(BootstrapException.Kind.UNREACHABLE);
		assertThat(gaveUp.getMessage()).isEqualTo("etcd did not answer within 5000 ms; last failure: cannot connect: "
				+ "connection refused by 10.0.0.1:2379 (nothing listens on that port, or a firewall rejects it)");
		// No hint about TLS: the connection never opened, so no TLS peer closed it.
		assertThat(unknown.getMessage()).isEqualTo("etcd did not answer within 5000 ms; last failure: cannot connect: "
				+ "unknown host: the name of http://10.0.0.1:2379 does not resolve");
	}
}
