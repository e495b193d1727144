package io.kvferry.examples.snippets;

import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.transport.netty.NettyKVTransport;
import reactor.core.publisher.Mono;

/**
 * Chunked prefill: a room of 6 pages sent in 3 calls, each with the pages one forward chunk completed, as SGLang's
 * chunked prefill does. The room's page count given to {@code init} tells which call is the last: the one that
 * reaches it, after which the aux row goes and the room succeeds.
 */
public final class ChunkedSends {

	private ChunkedSends() {
	}

	/**
	 * What the room did.
	 *
	 * @param afterFirstChunk the sender's state right after the first chunk was handed over (not SUCCESS: more pages
	 *        are promised)
	 * @param intact whether every page and the aux row arrived intact
	 */
	public record Chunked(KVPoll afterFirstChunk, boolean intact) {
	}

	/**
	 * Sends the room in 3 chunks.
	 *
	 * @return what the room did
	 */
	public static Chunked run() {
		try (Pair pair = Pair.start(NettyKVTransport.create())) {
			long room = 3;
			int[] srcPages = { 20, 21, 22, 23, 24, 25 };
			int[] dstPages = { 1, 2, 3, 4, 5, 6 };
			Cache.fill(pair.prefillArgs, srcPages, 2, 5);
			KVReceiver receiver = pair.decode.receiver(pair.bootstrap.address(), room);
			receiver.sendMetadata(dstPages, 3, new int[0]);
			// tag::chunked-sends[]
			KVSender sender = pair.prefill.sender(room);
			sender.init(6, 2);                                    // 6 pages in all, aux row 2
			sender.send(new int[] { 20, 21 }, new int[0]);        // after the first forward chunk
			KVPoll afterFirstChunk = sender.poll();                 // not SUCCESS: 4 pages are still promised
			sender.send(new int[] { 22, 23 }, new int[0]);
			sender.send(new int[] { 24, 25 }, new int[0]);        // reaches 6: the last call, then the aux row
			Mono.when(sender.completion(), receiver.completion()).block(Pair.TIMEOUT);
			// end::chunked-sends[]
			return new Chunked(afterFirstChunk, Cache.same(pair.prefillArgs, srcPages, 2, pair.decodeArgs, dstPages, 3));
		}
	}

	/**
	 * Runs the example.
	 *
	 * @param args none
	 */
	public static void main(String[] args) {
		Chunked c = run();
		System.out.println("after the first chunk: " + c.afterFirstChunk() + "; after the last: "
				+ (c.intact() ? "6 pages and the aux row arrived intact" : "bytes differ"));
		if (!c.intact()) {
			System.exit(1);
		}
	}
}
