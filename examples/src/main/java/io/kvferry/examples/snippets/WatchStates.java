package io.kvferry.examples.snippets;

import java.util.List;
import java.util.concurrent.CompletableFuture;

import io.kvferry.DecodeKVManager;
import io.kvferry.HostPort;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.KVStatusEvent;
import io.kvferry.transport.netty.NettyKVTransport;
import reactor.core.publisher.Mono;

/**
 * Watching rooms: a room's {@code states()} (its current state, then each change, completing after the last) and a
 * manager's {@code events()} (every change of every room, hot). Subscribers run on the manager's callback scheduler,
 * never on a transport thread, so they may block or call back into kvferry.
 */
public final class WatchStates {

	private WatchStates() {
	}

	/**
	 * What one room looked like from both sides.
	 *
	 * @param senderStates the prefill sender's states, in order
	 * @param receiverStates the decode receiver's states, in order
	 * @param decodeEvents decode's events for the room, up to its last state
	 */
	public record Watched(List<KVPoll> senderStates, List<KVPoll> receiverStates, List<KVStatusEvent> decodeEvents) {
	}

	/**
	 * Moves one room of 2 pages while watching it.
	 *
	 * @return what was seen
	 */
	public static Watched run() {
		try (Pair pair = Pair.start(NettyKVTransport.create())) {
			long room = 7;
			int[] srcPages = { 5, 6 };
			int[] dstPages = { 10, 11 };
			Cache.fill(pair.prefillArgs, srcPages, 0, 3);
			DecodeKVManager decode = pair.decode;
			HostPort prefillBootstrap = pair.bootstrap.address();
			// tag::watch-states[]
			// events() is hot: subscribe before the rooms you want to see. A slow subscriber loses its oldest
			// events and never slows a transfer.
			CompletableFuture<List<KVStatusEvent>> events = decode.events()
					.filter(e -> e.room() == room)
					.takeUntil(e -> e.current().isTerminal())
					.collectList().toFuture();

			KVReceiver receiver = decode.receiver(prefillBootstrap, room);
			receiver.sendMetadata(dstPages, 0, new int[0]);
			// states(): the current state, then each change (BOOTSTRAPPING ... SUCCESS or FAILED), then completes.
			CompletableFuture<List<KVPoll>> receiverStates = receiver.states()
					.doOnNext(state -> System.out.println("decode room " + room + ": " + state))
					.collectList().toFuture();
			// end::watch-states[]
			KVSender sender = pair.prefill.sender(room);
			sender.init(srcPages.length, 0);
			CompletableFuture<List<KVPoll>> senderStates = sender.states().collectList().toFuture();
			sender.send(srcPages, new int[0]);
			return Mono.zip(Mono.fromFuture(senderStates), Mono.fromFuture(receiverStates), Mono.fromFuture(events))
					.map(t -> new Watched(t.getT1(), t.getT2(), t.getT3()))
					.block(Pair.TIMEOUT);
		}
	}

	/**
	 * Runs the example.
	 *
	 * @param args none
	 */
	public static void main(String[] args) {
		Watched w = run();
		System.out.println("prefill states: " + w.senderStates());
		System.out.println("decode states:  " + w.receiverStates());
		w.decodeEvents().forEach(e -> System.out.println("decode event:   " + e));
	}
}
