package io.kvferry.examples.snippets;

import java.time.Duration;

import io.kvferry.HostPort;
import io.kvferry.PrefillKVManager;
import io.kvferry.bootstrap.PrefillParallelInfo;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.kvferry.transport.netty.NettyKVTransport;

/**
 * The bootstrap server embedded in a prefill process (SGLang's HTTP registry: {@code PUT /route},
 * {@code GET /route}), with a bearer token on registrations. A prefill instance of 2 TP ranks registers; decode's
 * view of it is what the client resolves: the instance's parallel sizes and each rank's endpoint.
 */
public final class EmbeddedBootstrap {

	private static final Duration TIMEOUT = Duration.ofSeconds(30);

	private EmbeddedBootstrap() {
	}

	/**
	 * What the registry answered.
	 *
	 * @param registered how many prefill ranks registered, as the server counts them
	 * @param info the instance's parallel sizes
	 * @param rank1 the endpoint the registry gives for TP rank 1
	 * @param rank1Listens where TP rank 1 actually listens
	 */
	public record Registry(int registered, PrefillParallelInfo info, HostPort rank1, HostPort rank1Listens) {
	}

	/**
	 * Starts the server and two prefill ranks, then asks the server about them.
	 *
	 * @return what the registry answered
	 */
	public static Registry run() {
		String token = "example-token";
		NettyKVTransport transport = NettyKVTransport.create();
		// tag::embedded-bootstrap[]
		DisposableBootstrapServer bootstrap = BootstrapServer.create()
				.host("127.0.0.1").port(0)                  // a free port; bootstrap.address() tells which
				.authToken(token)                           // registrations need it, reads stay open
				.bindNow();
		ReactorBootstrapClient client = ReactorBootstrapClient.create().bearerToken(token);
		// end::embedded-bootstrap[]
		PrefillKVManager rank0 = null;
		PrefillKVManager rank1 = null;
		try {
			rank0 = Pair.tp2PrefillRank(0, bootstrap.address(), transport, client);
			rank1 = Pair.tp2PrefillRank(1, bootstrap.address(), transport, client);
			// tag::resolve[]
			PrefillParallelInfo info = client.parallelInfo(bootstrap.address()).block(TIMEOUT);   // TP 2, DP 1, PP 1
			HostPort endpoint = client.rankEndpoint(bootstrap.address(), 0, 1, 0).block(TIMEOUT); // DP 0, TP 1, PP 0
			// end::resolve[]
			return new Registry(bootstrap.registeredCount(), info, endpoint, rank1.endpoint());
		}
		finally {
			for (PrefillKVManager m : new PrefillKVManager[] { rank0, rank1 }) {
				if (m != null) {
					m.disposeNow(TIMEOUT);
				}
			}
			transport.disposeNow(TIMEOUT);
			client.dispose();
			bootstrap.disposeNow();
		}
	}

	/**
	 * Runs the example.
	 *
	 * @param args none
	 */
	public static void main(String[] args) {
		Registry r = run();
		System.out.println(r.registered() + " prefill ranks registered; instance " + r.info() + "; TP rank 1 at "
				+ r.rank1() + " (listening on " + r.rank1Listens() + ")");
	}
}
