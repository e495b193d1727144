package io.kvferry.cli;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

import io.kvferry.KVManager;
import io.kvferry.KVMetricsRecorder;
import io.kvferry.metrics.micrometer.KVManagerMetrics;
import io.kvferry.transport.netty.LoopResources;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.netty.DisposableServer;
import reactor.netty.http.server.HttpServer;

/**
 * A Prometheus scrape endpoint ({@code GET /metrics}) for the KV managers of one process: bytes and pages moved, rooms
 * by state, room durations, failures by category, connections and lost heartbeats of every rank.
 */
final class MetricsEndpoint implements Disposable {

	private final DisposableServer server;
	private final PrometheusMeterRegistry registry;
	private final LoopResources loops;
	private final List<KVManagerMetrics> bindings = new ArrayList<>();

	private MetricsEndpoint(DisposableServer server, PrometheusMeterRegistry registry, LoopResources loops) {
		this.server = server;
		this.registry = registry;
		this.loops = loops;
	}

	/**
	 * Serves {@code /metrics} before the ranks start, so that their specs can take {@link #recorder()}.
	 *
	 * @param host where to listen
	 * @param port port (0: any free one)
	 * @return the running endpoint, with no rank bound yet
	 */
	static MetricsEndpoint start(String host, int port) {
		Objects.requireNonNull(host, "host");
		PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
		// Loops of its own, Epoll or NIO: Reactor Netty's would be io_uring, which this jar carries for the transports.
		LoopResources loops = LoopResources.create("kvferry-metrics", 1);
		DisposableServer server;
		try {
			server = HttpServer.create().runOn(loops.group()).host(host).port(port)
					.route(r -> r.get("/metrics", (req, res) -> res
							.header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
							// Rendering walks every meter: off the event loop.
							.sendString(Mono.fromCallable(registry::scrape).subscribeOn(Schedulers.boundedElastic()))))
					.bindNow(Duration.ofSeconds(10));
		}
		catch (RuntimeException e) {
			loops.dispose();
			throw e;
		}
		return new MetricsEndpoint(server, registry, loops);
	}

	/** @return what each rank's spec records room durations with */
	KVMetricsRecorder recorder() {
		return KVManagerMetrics.recorder(registry);
	}

	/** Publishes the statistics of {@code managers}, once they started. */
	synchronized void bind(List<? extends KVManager> managers) {
		for (KVManager m : managers) {
			bindings.add(KVManagerMetrics.bind(m, registry));
		}
	}

	/** @return the bound port */
	int port() {
		return server.port();
	}

	@Override
	public synchronized void dispose() {
		bindings.forEach(KVManagerMetrics::dispose);
		server.disposeNow(Duration.ofSeconds(5));
		loops.dispose();
	}

	@Override
	public boolean isDisposed() {
		return server.isDisposed();
	}
}
