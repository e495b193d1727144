package io.kvferry.examples.snippets;

import java.time.Duration;

import io.kvferry.HostPort;
import io.kvferry.PrefillKVManager;
import io.kvferry.bootstrap.PrefillParallelInfo;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import io.kvferry.bootstrap.server.BootstrapRoutes;
import io.kvferry.bootstrap.server.DisposableBootstrapRoutes;
import io.kvferry.transport.netty.NettyKVTransport;
import reactor.core.publisher.Mono;
import reactor.netty.DisposableServer;
import reactor.netty.http.server.HttpServer;

/**
 * The bootstrap routes on the engine's own API server, as today's SGLang serves its bootstrap protocol on the API
 * port: the engine's {@code /health} and {@code /generate} and SGLang's {@code /route} on one listener. Two prefill
 * TP ranks register there, and decode resolves them from the same address.
 */
public final class MountedBootstrap {

	private static final Duration TIMEOUT = Duration.ofSeconds(30);

	private MountedBootstrap() {
	}

	/**
	 * What the engine's server answered.
	 *
	 * @param registered how many prefill ranks registered
	 * @param info the instance's parallel sizes
	 * @param rank1 the endpoint the API server gives for TP rank 1
	 * @param rank1Listens where TP rank 1 actually listens
	 */
	public record Registry(int registered, PrefillParallelInfo info, HostPort rank1, HostPort rank1Listens) {
	}

	/**
	 * Starts the API server with the routes mounted and two prefill ranks, then asks the API server about them.
	 *
	 * @return what it answered
	 */
	public static Registry run() {
		NettyKVTransport transport = NettyKVTransport.create();
		ReactorBootstrapClient client = ReactorBootstrapClient.create();
		// tag::mounted-bootstrap[]
		DisposableBootstrapRoutes bootstrap = BootstrapRoutes.create()
				.maxBodyBytes(64 * 1024)                    // 413 beyond, as the standalone server
				.start();                                   // empty tables, their sweep
		DisposableServer api = HttpServer.create()
				.host("127.0.0.1").port(0)                  // the engine's API port
				.route(routes -> {
					routes.get("/health", (req, res) -> res.sendString(Mono.just("OK")));
					routes.post("/generate", (req, res) -> res.sendString(Mono.just("...")));
					bootstrap.accept(routes);               // PUT/GET /route, /register_dp_rank, /query_dp_ranks
				})
				.bindNow();
		HostPort bootstrapAddress = new HostPort("127.0.0.1", api.port());   // ranks register here
		// end::mounted-bootstrap[]
		PrefillKVManager rank0 = null;
		PrefillKVManager rank1 = null;
		try {
			rank0 = Pair.tp2PrefillRank(0, bootstrapAddress, transport, client);
			rank1 = Pair.tp2PrefillRank(1, bootstrapAddress, transport, client);
			PrefillParallelInfo info = client.parallelInfo(bootstrapAddress).block(TIMEOUT);
			HostPort endpoint = client.rankEndpoint(bootstrapAddress, 0, 1, 0).block(TIMEOUT);
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
			// tag::mounted-bootstrap-stop[]
			api.disposeNow(TIMEOUT);
			bootstrap.dispose();                            // after the server: the tables' sweep, the gauges
			// end::mounted-bootstrap-stop[]
		}
	}

	/**
	 * Runs the example.
	 *
	 * @param args none
	 */
	public static void main(String[] args) {
		Registry r = run();
		System.out.println(r.registered() + " prefill ranks registered on the API server; instance " + r.info()
				+ "; TP rank 1 at " + r.rank1() + " (listening on " + r.rank1Listens() + ")");
	}
}
