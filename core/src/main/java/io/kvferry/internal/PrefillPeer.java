package io.kvferry.internal;

import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongSupplier;

import io.kvferry.KVOverloadException;
import io.kvferry.KVTransferException;
import io.kvferry.RoomPath;
import io.kvferry.internal.stripe.StripedConnection;
import io.kvferry.spi.KVMessage;

/**
 * One decode rank as the prefill rooms it asked for see it: its connection, how this rank's buffers map onto its own,
 * the rooms it asked for with their leases, and how to tell it that a room failed here. Its {@link PrefillSession}
 * reads the rank's messages and fills this in; the rooms only read it, so they never reach back into the session.
 */
final class PrefillPeer {

	final StripedConnection connection;
	final Set<Room> rooms = ConcurrentHashMap.newKeySet();
	// The leases this decode rank renews on the rooms it asked for.
	final RoomLeases<Room> leases;
	// Rooms this decode rank asked for that no sender claimed yet.
	final AtomicInteger unclaimed = new AtomicInteger();
	private final int uniqueRank;
	// Set by the handshake, replaced when the decode rank re-registers its regions: how this rank's buffers map onto
	// the decode rank's.
	volatile TransferPlan plan;
	// The generation of the decode rank's regions the plan was made for: 0 from the handshake. Read and written on the
	// connection's thread.
	int layoutGeneration;
	// The decode rank's incarnation from its handshake: a decode rank that restarts comes back as another session.
	volatile long decodeIncarnation;
	// How the decode rank's connections move bytes: read at its first request, once every stripe joined, and kept.
	private volatile RoomPath path;

	/**
	 * @param leaseTicks the rank's lease clock
	 * @param uniqueRank this prefill rank's number in its reports
	 */
	PrefillPeer(StripedConnection connection, LongSupplier leaseTicks, int uniqueRank) {
		this.connection = connection;
		this.leases = new RoomLeases<>(leaseTicks);
		this.uniqueRank = uniqueRank;
	}

	/** Tells the decode rank that its room failed here, and why. */
	void refuse(long room, KVTransferException failure) {
		connection.send(refusal(room, failure));
	}

	/** Tells the decode rank that a room it asked for ended here, and how, before any room object was made. */
	void refuse(long room, RoomTable.Ended how) {
		connection.send(KVMessage.Status.failed(room, uniqueRank, how.cause(), how.reason(),
				Overload.millis(how.retryAfter())));
	}

	/** @return the Failed status that tells the decode rank why its room failed here: the cause, and a hint */
	KVMessage.Status refusal(long room, KVTransferException failure) {
		Duration hint = failure instanceof KVOverloadException o ? o.retryAfter() : Duration.ZERO;
		return KVMessage.Status.failed(room, uniqueRank, failure.failureCause(), failure.reason(),
				Overload.millis(hint));
	}

	/** @return the path of this decode rank's connections; read once all its stripes joined */
	RoomPath path() {
		RoomPath p = path;
		if (p == null) {
			p = connection.path();
			path = p;
		}
		return p;
	}

	/** @return whether the handshake went through: the decode rank may be told of a drain */
	boolean isHandshaken() {
		return plan != null;
	}

	@Override
	public String toString() {
		return connection.toString();
	}
}
