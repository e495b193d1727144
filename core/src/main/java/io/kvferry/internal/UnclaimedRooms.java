package io.kvferry.internal;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import reactor.core.Disposable;

/**
 * What decode ranks make a prefill rank hold for rooms its engine has not claimed yet: each such room keeps its
 * requests (page lists) until the engine makes its sender, so the rooms one peer may leave waiting, all peers together,
 * and the bytes their requests hold are bounded. Over a bound a request is refused at once, never queued.
 *
 * <p>Thread-safe; counts are adjusted under the room's monitor, so each room is counted and released once.
 */
final class UnclaimedRooms {

	/** Heap the requests of unclaimed rooms may hold, in all. */
	static final long MAX_BYTES = 64L << 20;

	private final int perPeer;
	private final int total;
	private final AtomicInteger rooms = new AtomicInteger();
	private final AtomicLong bytes = new AtomicLong();

	UnclaimedRooms(int perPeer, int total) {
		this.perPeer = perPeer;
		this.total = total;
	}

	/**
	 * Counts a request for a room no sender claimed yet.
	 *
	 * @param peer the rooms the requesting decode rank has waiting
	 * @param newRoom whether the request makes the room wait (its first request), rather than joins a waiting one
	 * @param requestBytes heap the request holds
	 * @return null when counted, else why the request is refused (nothing counted then)
	 */
	String admit(AtomicInteger peer, boolean newRoom, long requestBytes) {
		if (newRoom) {
			if (peer.incrementAndGet() > perPeer) {
				peer.decrementAndGet();
				return "this decode rank already has " + perPeer + " rooms waiting for their prefill sender";
			}
			if (rooms.incrementAndGet() > total) {
				rooms.decrementAndGet();
				peer.decrementAndGet();
				return total + " rooms already wait for their prefill sender on this rank";
			}
		}
		if (bytes.addAndGet(requestBytes) > MAX_BYTES) {
			bytes.addAndGet(-requestBytes);
			if (newRoom) {
				rooms.decrementAndGet();
				peer.decrementAndGet();
			}
			return "the requests of rooms waiting for their prefill sender already hold " + (MAX_BYTES >> 20)
					+ " MiB on this rank";
		}
		return null;
	}

	/**
	 * Tells, without counting anything, whether a request that would make a new room wait is over a bound: it is then
	 * refused before its room exists, so that the engine's later {@code sender(room)} is born failed with the reason.
	 *
	 * @return why it would be refused, or null
	 */
	String refuses(AtomicInteger peer, long requestBytes) {
		if (peer.get() >= perPeer) {
			return "this decode rank already has " + perPeer + " rooms waiting for their prefill sender";
		}
		if (rooms.get() >= total) {
			return total + " rooms already wait for their prefill sender on this rank";
		}
		if (bytes.get() + requestBytes > MAX_BYTES) {
			return "the requests of rooms waiting for their prefill sender already hold " + (MAX_BYTES >> 20)
					+ " MiB on this rank";
		}
		return null;
	}

	/** Releases a room once claimed or ended: one room of {@code peer}, and the bytes its requests held. */
	void release(AtomicInteger peer, long requestBytes) {
		peer.decrementAndGet();
		rooms.decrementAndGet();
		bytes.addAndGet(-requestBytes);
	}

	/** @return one room's share of the counts, empty until its first request is held */
	Hold hold() {
		return new Hold();
	}

	/** One unclaimed room's share of the counts: the peer it waits for, and the bytes its requests hold. */
	final class Hold {

		// Guarded by the room's monitor.
		private AtomicInteger peer;
		private long held;
		// Fails the room if it waits too long; cancelled on release, so that an ended room is not kept reachable by
		// its timer until the timeout (a minute's worth of rooms on a busy rank).
		private Disposable expiry;

		/** @return whether no request is held yet: the next one makes the room wait */
		boolean isEmpty() {
			return peer == null;
		}

		/**
		 * Counts a request for the room, charged to the peer whose request made it wait.
		 *
		 * @return null when counted, else why the request is refused (nothing counted then)
		 */
		String add(AtomicInteger requester, long requestBytes) {
			boolean first = peer == null;
			String over = admit(first ? requester : peer, first, requestBytes);
			if (over == null) {
				peer = first ? requester : peer;
				held += requestBytes;
			}
			return over;
		}

		/** The timer that fails the room if no sender claims it in time; cancelled on {@link #release}. */
		void expiry(Disposable timer) {
			expiry = timer;
		}

		/** Stops counting the room, once claimed or ended. */
		void release() {
			if (peer != null) {
				UnclaimedRooms.this.release(peer, held);
				peer = null;
				held = 0;
			}
			if (expiry != null) {
				expiry.dispose();
				expiry = null;
			}
		}
	}

	/** @return rooms waiting now */
	int rooms() {
		return rooms.get();
	}

	/** @return heap bytes waiting rooms' requests hold now (for tests and metrics) */
	long bytes() {
		return bytes.get();
	}

	/** @return heap a request holds: its page, state and count lists */
	static long bytesOf(io.kvferry.spi.KVMessage.TransferRequest req) {
		return 64L + 4L * (req.dstPages().length + req.stateIndices().length + req.stateCounts().length);
	}
}
