package io.kvferry;

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
 *
 * <p>Its state, outcome, path, phases and abort are every room's ({@link KVRoom}): its completion errors once the
 * failure was handed to every decode rank's connection, and its path is known once a decode rank asked for the room.
 */
public interface KVSender extends KVRoom {

	/**
	 * Sets how the room's bytes queue on connections shared with other rooms (default {@link RoomPriority#NORMAL}).
	 * Before {@link #init}, so that every byte of the room queues alike: a Success must never overtake its data.
	 *
	 * @param priority the room's priority
	 * @throws IllegalStateException after {@link #init}
	 */
	void priority(RoomPriority priority);

	/**
	 * @param numPages pages this rank will send for the room (the last {@link #send} is detected by count)
	 * @param auxIndex source aux row, or -1 when there is no aux data
	 */
	void init(int numPages, int auxIndex);

	/**
	 * Sends one prefill chunk. May be called before decode's destinations arrived (optimistic prefill): chunks then
	 * wait for them, within {@link PrefillSpec#optimisticSends}'s bounds; past them the room fails with
	 * {@link FailureCause#REQUEUE}, and the engine releases the pages and queues the request again.
	 *
	 * @param pageIndices source pages of this chunk, in order
	 * @param stateIndices source state slots, read on the last chunk only
	 * @throws IllegalStateException before {@link #init}, past {@code numPages}, or while a chunk goes layer by layer
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

	/**
	 * Sends one layer of a prefill chunk as soon as the engine computed it, so that the layer moves while the next
	 * ones are computed and only the last layer's transfer remains once compute ends. The chunk's pages of that
	 * layer's KV buffers go (MHA: its K and V buffer; MLA: its latent buffer), in the same blocks and order as
	 * {@link #send} would send them.
	 *
	 * <p>The first call opens a chunk; the chunk is complete once each of this rank's layers was sent once, in any
	 * order, with the same pages. Only then may the next chunk start, layer by layer or whole with {@link #send}. The
	 * room's last chunk's last layer is followed by state, aux and Success, as its last {@link #send} would be.
	 *
	 * <p>Layers are counted in this rank's KV buffers: main-model layers first, then draft-model layers, so
	 * {@code 0 .. kvArgs.kvLayerCount() + kvArgs.draftLayers() - 1}; a PP stage counts only its own, from 0 (model
	 * layer {@code kvArgs.prefillStartLayer()}).
	 *
	 * <pre>{@code
	 * sender.init(numPages, auxRow);
	 * for (int layer = 0; layer < layers; layer++) {
	 *     model.forwardLayer(layer, batch);                    // the engine's compute
	 *     sender.sendLayer(layer, chunkPages, stateSlots);     // moves while layer + 1 is computed
	 * }
	 * }</pre>
	 *
	 * @param layer the layer just computed
	 * @param pageIndices source pages of the chunk, in order: the same for every layer of a chunk
	 * @param stateIndices source state slots, read when this call completes the room's last chunk
	 * @throws IllegalArgumentException for a layer or index out of range
	 * @throws IllegalStateException before {@link #init}, past {@code numPages}, for a layer sent twice or other pages
	 *         than the open chunk's
	 */
	void sendLayer(int layer, int[] pageIndices, int[] stateIndices);

	/**
	 * {@link #sendLayer(int, int[], int[])} for a rank whose state regions declare kinds: one source index list per
	 * state component, in declared order, as {@link #send(int[], int[][])} takes them.
	 *
	 * @param layer the layer just computed
	 * @param pageIndices source pages of the chunk, the same for every layer of a chunk
	 * @param stateIndices one source index list per state component
	 */
	void sendLayer(int layer, int[] pageIndices, int[][] stateIndices);

	/**
	 * {@link #sendLayer(int, int[], int[])} without state slots.
	 *
	 * @param layer the layer just computed
	 * @param pageIndices source pages of the chunk, the same for every layer of a chunk
	 */
	default void sendLayer(int layer, int[] pageIndices) {
		sendLayer(layer, pageIndices, new int[0]);
	}
}
