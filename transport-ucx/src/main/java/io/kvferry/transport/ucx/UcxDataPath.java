package io.kvferry.transport.ucx;

/**
 * How a UCX connection moves KV bytes. Control messages always travel as UCX active messages, in order with the
 * bytes.
 */
public enum UcxDataPath {

	/**
	 * One-sided where the UCX transport between the two ranks does RMA natively (shared memory on one host, InfiniBand
	 * or RoCE verbs between hosts), active messages where it only emulates RMA (TCP). The default.
	 */
	AUTO,

	/**
	 * Decode reads each block from prefill's registered pages with a UCX get, after its own grant accepted the block's
	 * header, straight into the pages granted: the peer never holds a key to decode's memory. Blocks whose source is
	 * not in a registered region go as active messages.
	 */
	ONE_SIDED,

	/**
	 * The bytes travel as active messages, which UCX sends eagerly or by rendezvous (where decode's grant again names
	 * the pages they land in).
	 */
	ACTIVE_MESSAGES
}
