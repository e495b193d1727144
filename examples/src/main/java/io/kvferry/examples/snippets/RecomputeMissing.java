package io.kvferry.examples.snippets;

import java.time.Duration;
import java.util.Arrays;

import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.KVTransferException;
import io.kvferry.LandedPages;
import io.kvferry.transport.netty.NettyKVTransport;
import reactor.core.publisher.Flux;

/**
 * A room fails half way and decode's engine recomputes only the pages that did not land (vLLM's
 * {@code kv_load_failure_policy = recompute}): the failure's {@link LandedPages}, from decode's own ledger, names the
 * destination pages whose every byte landed; the others are the ones to compute again.
 */
public final class RecomputeMissing {

	private RecomputeMissing() {
	}

	/** Decode's engine, as far as this example needs it. */
	interface Engine {
		/**
		 * Computes the KV of these destination pages locally (a prefill of their tokens on decode).
		 *
		 * @param room the request's room
		 * @param pages destination pages to fill
		 */
		void recompute(long room, int[] pages);
	}

	/**
	 * What decode did.
	 *
	 * @param landed the pages the failure said landed whole
	 * @param recomputed the pages the engine computed again
	 */
	public record Recovered(int[] landed, int[] recomputed) {
	}

	/**
	 * Prefill sends the first two of four pages and then gives up; decode recomputes the other two.
	 *
	 * @return what decode kept and what it recomputed
	 */
	public static Recovered run() {
		try (Pair pair = Pair.start(NettyKVTransport.create())) {
			long room = 13;
			int[] srcPages = { 0, 1, 2, 3 };
			Cache.fill(pair.prefillArgs, srcPages, 0, 3);
			KVReceiver receiver = pair.decode.receiver(pair.bootstrap.address(), room);
			receiver.sendMetadata(new int[] { 20, 21, 22, 23 }, -1, new int[0]);
			KVSender sender = pair.prefill.sender(room);
			sender.init(srcPages.length, -1);
			sender.states().filter(s -> s == KVPoll.WAITING_FOR_INPUT).blockFirst(Pair.TIMEOUT);
			sender.send(new int[] { 0, 1 }, new int[0]);
			// Prefill gives up once the first chunk landed on decode (an abort drops blocks still queued).
			long firstChunk = 2L * pair.decodeArgs.kvRegions().stream().mapToLong(r -> r.itemLen()).sum();
			Flux.interval(Duration.ofMillis(1)).filter(t -> pair.decode.stats().bytesReceived() >= firstChunk)
					.blockFirst(Pair.TIMEOUT);
			sender.abort("prefill ran out of memory");
			int[][] recomputed = new int[1][];
			Engine engine = (r, pages) -> recomputed[0] = pages;
			// tag::recompute-missing[]
			try {
				receiver.completion().block(Pair.TIMEOUT);
			}
			catch (KVTransferException failure) {
				// Errors once no byte can land any more: the pages named landed hold every byte, in every layer.
				LandedPages landed = failure.landedPages();
				engine.recompute(room, landed.missing());   // keeps landed.landed(); per layer: landed.missing(layer)
			}
			// end::recompute-missing[]
			return new Recovered(landedOf(receiver), recomputed[0]);
		}
	}

	private static int[] landedOf(KVReceiver receiver) {
		if (receiver.poll() != KVPoll.FAILED) {
			throw new IllegalStateException("the room " + receiver.poll() + " (expected: FAILED)");
		}
		try {
			receiver.completion().block(Pair.TIMEOUT);
			throw new IllegalStateException("the room succeeded (expected: failed)");
		}
		catch (KVTransferException e) {
			return e.landedPages().landed();
		}
	}

	/**
	 * Runs the example.
	 *
	 * @param args none
	 */
	public static void main(String[] args) {
		Recovered r = run();
		System.out.println("landed:     " + Arrays.toString(r.landed()));
		System.out.println("recomputed: " + Arrays.toString(r.recomputed()));
	}
}
