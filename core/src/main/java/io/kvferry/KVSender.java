package io.kvferry;

import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The prefill side of one room on one rank. Made by {@link PrefillKVManager#sender(long)}. Every method returns at once; the
 * work happens on the transport's threads.
 *
 * <pre>{@code
 * KVSender sender = manager.sender(room);
 * sender.init(numPages, auxRow);
 * sender.send(firstChunkPages, new int[0]);
 * sender.send(lastChunkPages, stateSlots);   // cursor reaches numPages: last chunk, then aux, then Success
 * sender.completion().block(Duration.ofSeconds(30));
 * }</pre>
 */
public interface KVSender {

	long room();

	/**
	 * @param numPages pages this rank will send for the room (the last {@link #send} is detected by count)
	 * @param auxIndex source aux row, or -1 when there is no aux data
	 */
	void init(int numPages, int auxIndex);

	/**
	 * Sends one prefill chunk. May be called before decode's destinations arrived; chunks then wait for them.
	 *
	 * @param pageIndices source pages of this chunk, in order
	 * @param stateIndices source state slots, read on the last chunk only
	 * @throws IllegalStateException before {@link #init} or past {@code numPages}
	 */
	void send(int[] pageIndices, int[] stateIndices);

	/**
	 * Sends one prefill chunk of a rank whose state regions declare kinds ({@link KVArgs#stateComponents()}): one
	 * source index list per state component, in declared order, read on the last chunk only. Pages of a prefix decode
	 * already holds are not sent (decode names it with its destinations), and with all-CP-ranks transfer this rank
	 * sends only its share: either way the engine passes every page of the room.
	 *
	 * @param pageIndices source pages of this chunk, in order
	 * @param stateIndices one source index list per state component
	 * @throws IllegalStateException before {@link #init} or past {@code numPages}
	 * @throws IllegalArgumentException for another number of state lists
	 */
	void send(int[] pageIndices, int[][] stateIndices);

	/** @return the room's current state (latched once terminal) */
	KVPoll poll();

	/** @return the room's states: the current one first, then each change; completes after the terminal one */
	Flux<KVPoll> states();

	/** @return completes on {@link KVPoll#SUCCESS}, errors with {@link KVTransferException} on failure */
	Mono<Void> completion();

	/**
	 * Fails the room here and tells decode. Idempotent. Eager, like a cancel: the abort happens when this method is
	 * called, subscribed or not; the returned {@code Mono} is a cached signal, for any number of subscribers.
	 *
	 * @param reason why
	 * @return completes when the abort has been handed to every peer connection
	 */
	Mono<Void> abort(String reason);
}
