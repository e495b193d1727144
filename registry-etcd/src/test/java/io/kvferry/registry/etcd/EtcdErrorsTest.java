package io.kvferry.registry.etcd;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.CompletionException;

import javax.net.ssl.SSLHandshakeException;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
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
}
