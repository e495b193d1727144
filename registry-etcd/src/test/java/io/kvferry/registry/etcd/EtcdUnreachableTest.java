package io.kvferry.registry.etcd;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.time.Duration;

import io.kvferry.HostPort;
import io.kvferry.bootstrap.BootstrapException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;

/**
 * An etcd that cannot be reached, over real sockets: the failure names etcd, the address and what kept it away. (How
 * gRPC reports an unresolvable name depends on the resolver's speed; {@link EtcdErrorsTest} feeds that form.)
 */
class EtcdUnreachableTest {

	private static final HostPort INSTANCE = new HostPort("prefill-a", 8998);
	// Long enough for the first call to build the client and see a member refuse; the call tries until then.
	private static final Duration TIMEOUT = Duration.ofSeconds(6);
	private static final Duration VERIFY = Duration.ofSeconds(30);

	private EtcdBootstrapClient client;

	@AfterEach
	void dispose() {
		if (client != null) {
			client.dispose();
		}
	}

	@Test
	void aClosedPortIsARefusalByThatAddress() throws IOException {
		int port;
		try (ServerSocket s = new ServerSocket()) {
			s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
			port = s.getLocalPort();
		}
		client = EtcdBootstrapClient.create("127.0.0.1:" + port).timeout(TIMEOUT);

		StepVerifier.create(client.parallelInfo(INSTANCE))
				.expectErrorSatisfies(e -> {
					BootstrapException failure = (BootstrapException) e;
					assertThat(failure.kind()).isEqualTo(BootstrapException.Kind.UNREACHABLE);
					assertThat(failure.getMessage()).startsWith("parallel info of " + INSTANCE + " on etcd [http://"
							+ "127.0.0.1:" + port + "]: etcd did not answer within 6000 ms; last failure: cannot connect: "
							+ "connection refused by 127.0.0.1:" + port + " (nothing listens on that port");
				})
				.verify(VERIFY);
	}
}
