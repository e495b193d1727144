package io.kvferry;

import java.util.Locale;

/** Why a room failed, as a small fixed set (reasons themselves name rooms and addresses, too many values for a tag). */
public enum FailureCause {
	/** A state lasted longer than its timeout. */
	TIMEOUT,
	/** An abort, on this side or sent by the other. */
	ABORTED,
	/** The connection to the peer rank closed or went silent. */
	CONNECTION_LOST,
	/** The two sides' layouts cannot work together (sizes, page size, dtype, item lengths). */
	INCOMPATIBLE,
	/** The prefill instance could not be resolved through its bootstrap server or registry. */
	BOOTSTRAP,
	/** The peer rank reported the room failed. */
	PEER_FAILED,
	/**
	 * The peer rank restarted: a process with another incarnation took its place (its registration or its handshake
	 * said so), and what was asked of the old one can no longer arrive. The reason names both incarnations.
	 */
	PEER_RESTARTED,
	/** The manager was closed. */
	CLOSED,
	/** The peer broke the protocol for this room (a write outside its pages, a request it cannot serve). */
	PROTOCOL,
	/** A Success whose bytes did not all land (count or checksum). */
	INCOMPLETE,
	/**
	 * A bound was reached: a subscriber fell behind and its room was dropped, the prefill rank turned the room away
	 * because too many rooms (or too many request bytes) already wait for its engine, or the decode rank because too
	 * many rooms are in flight. The failure is a {@link KVOverloadException} with a retry hint; another rank may take
	 * the room at once.
	 */
	OVERLOAD,
	/**
	 * A draining manager (this one, or the peer rank) admits no new rooms, or its drain deadline passed before the
	 * room ended; also a decode manager re-registering its regions, which admits no new rooms meanwhile and aborts
	 * those still live at its deadline.
	 */
	DRAINING,
	/**
	 * The engine sent chunks before decode asked for the room (optimistic prefill), and decode's requests did not come
	 * in time, or too many rooms already held such chunks: release the room's pages and queue the request again.
	 */
	REQUEUE,
	/**
	 * Prefill held the room's pages on a lease that decode did not renew in time: the decode rank that asked for the
	 * room stopped renewing it (it hangs, was stopped, or no longer holds the room) while the connection stayed open.
	 * The reason names the room, the decode rank and how long it was silent.
	 */
	LEASE_EXPIRED,
	/** Anything else. */
	OTHER,
	/**
	 * Decode stopped asking the prefill rank for rooms after failing to reach it again and again (its connection or
	 * handshake failed): its circuit breaker is open, and a probe in the background readmits it once it
	 * answers. The room was not sent; another rank may take it at once. The reason names the rank and its last
	 * failure.
	 */
	PEER_UNAVAILABLE,
	/**
	 * Every byte of the room landed, but they are not what the engine expected: a room of tensors whose manifest names
	 * other tensors than the receiver placed (the reason names the first that differs), or another check the engine
	 * gave the receiver ({@link KVReceiver#verify}). Decode's own.
	 */
	MISMATCH;

	/** @return the lower-case name, for metric tags ({@code connection_lost}) */
	public String tag() {
		return name().toLowerCase(Locale.ROOT);
	}
}
