package io.kvferry;

/**
 * How the bytes of one KV item (one page of one layer buffer) are ordered, as the attention backend lays out its
 * pool. Each side declares its own layout in the handshake and the two may differ: prefill re-lays the bytes as it
 * sends, reading each head of each token where its layout keeps it and writing it where decode's layout wants it, so
 * decode's pages always hold decode's layout. The same holds for head-major pages on both sides cut by token
 * (re-paging between page sizes, head slices between TP sizes). MLA's latent is one head per token, ordered alike in
 * both layouts.
 */
public enum KVLayout {

	/** Token-major: a page is {@code pageSize} tokens, each all its heads, each {@code headDim} values (the default). */
	NHD,

	/** Head-major: a page is its heads, each {@code pageSize} tokens of {@code headDim} values. */
	HND
}
