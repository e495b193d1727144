package io.kvferry.transport.netty;

/**
 * Whether a {@link NettyKVTransport} moves KV bytes through shared memory when both ends of a connection run on one
 * host (see {@link NettyKVTransport#sameHost(SameHost)}).
 */
public enum SameHost {

	/**
	 * Use a shared staging ring under {@code /dev/shm} when the handshake proves both sides share a host (same boot
	 * id, and the side that accepted opened the ring file the other created); otherwise, or when setting it up fails,
	 * the bytes go over TCP as usual (the reason is logged once). Never under TLS.
	 */
	AUTO,

	/** Always TCP; offers of a ring from peers are refused. */
	OFF
}
