package io.kvferry.examples.snippets;

import java.util.List;

import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.transport.netty.NettyKVTransport;
import reactor.core.publisher.Mono;

/**
 * Layer-wise streaming: prefill sends each layer of a chunk as soon as it computed it, and decode's {@code layers()}
 * shows each layer once all its bytes are in place. The room succeeds after the last layer, as after a last
 * {@code send}.
 */
public final class LayerwiseSends {

	private LayerwiseSends() {
	}

	/**
	 * What the room did.
	 *
	 * @param landed the layers decode's {@code layers()} emitted, in order
	 * @param intact whether every page and the aux row arrived intact
	 */
	public record Layerwise(List<Integer> landed, boolean intact) {
	}

	/**
	 * Sends a room of 4 pages layer by layer.
	 *
	 * @return what the room did
	 */
	public static Layerwise run() {
		try (Pair pair = Pair.start(NettyKVTransport.create())) {
			long room = 13;
			int[] srcPages = { 10, 11, 12, 13 };
			int[] dstPages = { 4, 5, 6, 7 };
			Cache.fill(pair.prefillArgs, srcPages, 1, 9);
			KVReceiver receiver = pair.decode.receiver(pair.bootstrap.address(), room);
			receiver.sendMetadata(dstPages, 0, new int[0]);
			// tag::layerwise-sends[]
			KVSender sender = pair.prefill.sender(room);
			sender.init(4, 1);                                    // 4 pages in all, aux row 1
			int layers = pair.prefillArgs.kvLayerCount() + pair.prefillArgs.draftLayers();
			for (int layer = 0; layer < layers; layer++) {
				// ... the engine computes this layer of the chunk, then hands it over while it computes the next:
				sender.sendLayer(layer, new int[] { 10, 11, 12, 13 });
			}
			Mono.when(sender.completion(), receiver.completion()).block(Pair.TIMEOUT);
			// Decode: each layer once, as its last byte landed (hot; a late subscriber gets those already landed).
			List<Integer> landed = receiver.layers().collectList().block(Pair.TIMEOUT);
			// end::layerwise-sends[]
			return new Layerwise(landed, Cache.same(pair.prefillArgs, srcPages, 1, pair.decodeArgs, dstPages, 0));
		}
	}

	/**
	 * Runs the example.
	 *
	 * @param args none
	 */
	public static void main(String[] args) {
		Layerwise l = run();
		System.out.println("layers landed: " + l.landed() + "; "
				+ (l.intact() ? "4 pages and the aux row arrived intact" : "bytes differ"));
		if (!l.intact()) {
			System.exit(1);
		}
	}
}
