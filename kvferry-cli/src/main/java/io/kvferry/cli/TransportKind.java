package io.kvferry.cli;

import java.time.Duration;

import io.kvferry.spi.KVTransport;

/**
 * The KV transports a command's ranks run on, as {@code --transport} chose them: kvferry's TCP transport (with its
 * same-host ring, {@link NettyTransports}) or UCX ({@link UcxTransports}). Commands make, describe and dispose of their
 * transports through it alone, so that UCX's classes, and its native library, are loaded only when a command asks for
 * UCX: every other command runs on a machine without UCX.
 */
interface TransportKind {

	/**
	 * @param heartbeat the heartbeat interval of every connection
	 * @return a new transport (the caller disposes it with {@link #dispose})
	 */
	KVTransport create(Duration heartbeat);

	/** @return the transports this kind uses, as a command prints them when it starts */
	String banner();

	/** @return what a summary says about the path {@code transport}'s connections took */
	String describe(KVTransport transport);

	/** Disposes of a transport this kind made; never throws. */
	void dispose(KVTransport transport);
}
