package io.kvferry;

/**
 * How the bytes of one KV item (one page of one layer buffer) are ordered, as the attention backend lays out its
 * pool. Both sides of a session must declare the same layout (checked at the handshake). Re-paging between different
 * page sizes, head slicing between different TP sizes and decode context parallelism address a token's bytes inside a
 * page, which only {@link #NHD} allows; with {@link #HND} pages move whole, so those topologies are refused.
 */
public enum KVLayout {

	/** Token-major: a page is {@code pageSize} tokens, each all its heads, each {@code headDim} values (the default). */
	NHD,

	/** Head-major: a page is its heads, each {@code pageSize} tokens of {@code headDim} values. */
	HND
}
