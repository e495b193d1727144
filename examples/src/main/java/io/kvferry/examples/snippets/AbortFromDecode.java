package io.kvferry.examples.snippets;

import io.kvferry.FailureCause;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.KVTransferException;
import io.kvferry.transport.netty.NettyKVTransport;
import reactor.core.publisher.Mono;

/**
 * Decode aborts a room (its request was cancelled) after prefill accepted it: what each side's caller sees. The
 * {@code abort} call fails the room at once; decode's {@code completion()} errors only once prefill acknowledged, so
 * no byte can land in the room's pages any more and they may be reused. Both sides' {@code completion()} errors with a
 * {@link KVTransferException} whose cause is {@link FailureCause#ABORTED} and whose reason carries decode's words.
 */
public final class AbortFromDecode {

	private AbortFromDecode() {
	}

	/**
	 * What the callers saw.
	 *
	 * @param decodeFailure the decode receiver's completion error
	 * @param prefillFailure the prefill sender's completion error
	 * @param prefillState the sender's state after the abort
	 */
	public record Aborted(KVTransferException decodeFailure, KVTransferException prefillFailure,
			KVPoll prefillState) {
	}

	/**
	 * Opens a room on both sides, lets prefill receive decode's destinations, then aborts it from decode.
	 *
	 * @return what the callers saw
	 */
	public static Aborted run() {
		try (Pair pair = Pair.start(NettyKVTransport.create())) {
			long room = 11;
			KVReceiver receiver = pair.decode.receiver(pair.bootstrap.address(), room);
			receiver.sendMetadata(new int[] { 0, 1, 2 }, 0, new int[0]);
			KVSender sender = pair.prefill.sender(room);
			sender.init(3, 0);
			// Prefill waits for input once decode's destinations arrived; the engine has not sent a page yet.
			sender.states().filter(s -> s == KVPoll.WAITING_FOR_INPUT).blockFirst(Pair.TIMEOUT);
			// tag::abort-from-decode[]
			// Decode: the request was cancelled. The call aborts; free the pages only when completion() errors, never
			// on FAILED (bytes may still be landing then).
			receiver.abort("request cancelled by the client");
			KVTransferException decodeFailure = failure(receiver.completion());
			// Prefill: the sender fails too; the engine frees its pages and skips the remaining sends.
			KVTransferException prefillFailure = failure(sender.completion());
			// decodeFailure.failureCause() == ABORTED, prefillFailure.failureCause() == ABORTED,
			// prefillFailure.reason() contains "request cancelled by the client"
			// end::abort-from-decode[]
			return new Aborted(decodeFailure, prefillFailure, sender.poll());
		}
	}

	// A room's completion() errors with KVTransferException when the room fails; anything else is a bug here.
	private static KVTransferException failure(Mono<Void> completion) {
		try {
			completion.block(Pair.TIMEOUT);
		}
		catch (KVTransferException e) {
			return e;
		}
		throw new IllegalStateException("the room succeeded (expected: failed with ABORTED)");
	}

	/**
	 * Runs the example.
	 *
	 * @param args none
	 */
	public static void main(String[] args) {
		Aborted a = run();
		System.out.println("decode saw:  " + a.decodeFailure().failureCause() + " (" + a.decodeFailure().reason() + ")");
		System.out.println("prefill saw: " + a.prefillFailure().failureCause() + " (" + a.prefillFailure().reason()
				+ "), state " + a.prefillState());
	}
}
