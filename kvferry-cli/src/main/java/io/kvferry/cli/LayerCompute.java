package io.kvferry.cli;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import io.kvferry.KVArgs;
import io.kvferry.KVSender;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;

/**
 * A stand-in for a prefill forward pass that takes time per layer, on a timer rather than the CPU (the cores stay for
 * the transfer): model layer after model layer, each PP stage's ranks computing their own layers, the TP ranks of a
 * stage in parallel. Layer-wise, every rank sends a layer of the chunk as soon as it is computed; otherwise each rank
 * sends the whole chunk once the last layer is done. Draft layers go after the main model's.
 */
final class LayerCompute {

	private LayerCompute() {
	}

	/**
	 * @param senders one per rank of the DP group
	 * @param args each rank's KV args, in the same order
	 * @param pages the chunk's pages
	 * @param state state slots, read on the room's last chunk
	 * @param perLayer compute time of one model layer (zero: none)
	 * @param layerwise send each layer as it is computed
	 * @param timer runs the compute delays
	 * @return the {@link System#nanoTime()} at which the chunk's last layer was computed (taken before it is handed
	 *         over, so that a slow hand-over on a busy machine cannot hide in the transfer time), once every sender
	 *         has it
	 */
	static Mono<Long> forward(List<KVSender> senders, List<KVArgs> args, int[] pages, int[] state, Duration perLayer,
			boolean layerwise, Scheduler timer) {
		int layers = args.stream().mapToInt(a -> a.prefillStartLayer() + a.kvLayerCount()).max().orElse(0);
		AtomicLong computed = new AtomicLong(System.nanoTime());
		return Flux.range(0, layers)
				.concatMap(layer -> compute(perLayer, timer).then(Mono.fromRunnable(() -> {
					computed.set(System.nanoTime());
					if (!layerwise) {
						return;
					}
					for (int i = 0; i < senders.size(); i++) {
						int local = layer - args.get(i).prefillStartLayer();
						if (local >= 0 && local < args.get(i).kvLayerCount()) {
							senders.get(i).sendLayer(local, pages, state);
						}
					}
				})))
				.then(Mono.fromRunnable(() -> {
					for (int i = 0; i < senders.size(); i++) {
						KVArgs a = args.get(i);
						if (!layerwise) {
							senders.get(i).send(pages, state);
							continue;
						}
						for (int j = 0; j < a.draftLayers(); j++) {
							senders.get(i).sendLayer(a.kvLayerCount() + j, pages, state);
						}
					}
				}))
				.then(Mono.fromCallable(computed::get));
	}

	private static Mono<Void> compute(Duration perLayer, Scheduler timer) {
		return perLayer.isZero() ? Mono.empty() : Mono.delay(perLayer, timer).then();
	}
}
