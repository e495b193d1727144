package io.kvferry.examples.snippets;

import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.metrics.micrometer.KVManagerMetrics;
import io.kvferry.transport.netty.NettyKVTransport;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;

/**
 * Micrometer metrics of both managers ({@code kvferry-metrics-micrometer}): bytes and pages moved, live rooms by
 * state, connections and failures by cause, every meter tagged with its manager and mode (room durations come from
 * {@code KVManagerMetrics.recorder(registry)} given to a manager's spec). Here the registry is a
 * {@link SimpleMeterRegistry}; a service binds its Prometheus or OTLP registry the same way.
 */
public final class RoomMetrics {

	private RoomMetrics() {
	}

	/**
	 * What the registry holds after one room of 4 pages.
	 *
	 * @param bytesSent prefill's {@code kvferry.bytes.sent}
	 * @param bytesReceived decode's {@code kvferry.bytes.received}
	 * @param pagesSent prefill's {@code kvferry.pages.sent}
	 */
	public record Measured(double bytesSent, double bytesReceived, double pagesSent) {
	}

	/**
	 * Moves one room with both managers bound to one registry.
	 *
	 * @return the counters read from the registry
	 */
	public static Measured run() {
		try (Pair pair = Pair.start(NettyKVTransport.create())) {
			long room = 5;
			int[] pages = { 0, 1, 2, 3 };
			// tag::metrics[]
			MeterRegistry registry = new SimpleMeterRegistry();
			Disposable prefillMetrics = KVManagerMetrics.bind(pair.prefill, registry);
			Disposable decodeMetrics = KVManagerMetrics.bind(pair.decode, registry);
			// end::metrics[]
			try {
				KVReceiver receiver = pair.decode.receiver(pair.bootstrap.address(), room);
				receiver.sendMetadata(pages, 0, new int[0]);
				KVSender sender = pair.prefill.sender(room);
				sender.init(pages.length, 0);
				sender.send(pages, new int[0]);
				Mono.when(sender.completion(), receiver.completion()).block(Pair.TIMEOUT);
				// tag::metrics-read[]
				double received = registry.get("kvferry.bytes.received").tag("mode", "decode")
						.functionCounter().count();
				// end::metrics-read[]
				return new Measured(
						registry.get("kvferry.bytes.sent").tag("mode", "prefill").functionCounter().count(),
						received,
						registry.get("kvferry.pages.sent").tag("mode", "prefill").functionCounter().count());
			}
			finally {
				prefillMetrics.dispose();
				decodeMetrics.dispose();
			}
		}
	}

	/**
	 * Runs the example.
	 *
	 * @param args none
	 */
	public static void main(String[] args) {
		Measured m = run();
		System.out.printf("kvferry.bytes.sent %.0f, kvferry.bytes.received %.0f, kvferry.pages.sent %.0f%n",
				m.bytesSent(), m.bytesReceived(), m.pagesSent());
	}
}
