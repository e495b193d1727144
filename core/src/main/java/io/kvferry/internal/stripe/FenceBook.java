package io.kvferry.internal.stripe;

import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.Consumer;

import io.kvferry.FailureCause;
import io.kvferry.spi.KVMessage;

/**
 * One room's bytes from one dialled prefill rank, per stripe: what landed, the fence that reports what was sent on
 * each further stripe that carried some, and the rank's Success, which reports stripe 0, names the stripes that fence,
 * and is judged only once each of their fences arrived (so that every byte of the room landed, on whichever stripe it
 * came). A stripe the Success names no fence on carried nothing of the room: a byte or a fence of the room on it fails
 * the room.
 *
 * <p>A stripe's tally is made and fed on that stripe's thread only, in its order, and its fence (for stripe 0, the
 * Success) arrives on that thread after its last byte; the fences are read by the data path without a lock. Judging
 * takes this object's monitor, which the stripes' fences and the Success share, and calls out only after releasing it.
 */
final class FenceBook {

	private final DialledConnection connection;
	private final long room;
	private final Tally[] tallies;
	private final AtomicReferenceArray<KVMessage.Fence> fences;
	// Whether the rank was asked to write the room; set before the request goes out.
	volatile boolean asked;
	// The stripes the Success names fences on; written before settled.
	private volatile int fenced;
	// Set on stripe 0's thread when the rank's Success arrived: nothing more of the room may come on stripe 0, nor on a
	// stripe it names no fence on.
	private volatile boolean settled;
	// Guarded by this.
	private long settledBytes;
	private long settledChecksum;
	private Consumer<String> verdict;

	FenceBook(DialledConnection connection, long room, int width) {
		this.connection = connection;
		this.room = room;
		this.tallies = new Tally[width];
		this.fences = new AtomicReferenceArray<>(width);
	}

	/** @return why the stripe may carry no more bytes of the room, or null while it may; on the stripe's thread */
	String lateOn(int stripe) {
		if (fences.get(stripe) != null) {
			return "prefill rank " + connection.endpointName() + " sent bytes of room " + room + " on stripe " + stripe
					+ " after fencing it";
		}
		if (settled && (stripe == 0 || (fenced & (1 << stripe)) == 0)) {
			return "prefill rank " + connection.endpointName() + " sent bytes of room " + room + " on stripe " + stripe
					+ " after its Success" + (stripe == 0 ? "" : ", which named no fence there");
		}
		return null;
	}

	/** @return what landed of the room on the stripe; made on first use, on the stripe's thread */
	Tally tally(int stripe) {
		Tally t = tallies[stripe];
		if (t == null) {
			t = new Tally(connection.checksums);
			tallies[stripe] = t;
		}
		return t;
	}

	/**
	 * Stripe {@code stripe} (not 0) reports what it carried of the room: it must be what landed on it. The peer hears
	 * of a broken rule, or the held Success gets its verdict, after this object's monitor was released.
	 */
	void fence(int stripe, KVMessage.Fence fence, DialledConnection.Peer peer) {
		FailureCause cause = null;
		String error = null;
		Consumer<String> judged = null;
		String result = null;
		synchronized (this) {
			if (!fences.compareAndSet(stripe, null, fence)) {
				cause = FailureCause.PROTOCOL;
				error = "prefill rank " + connection.endpointName() + " fenced room " + room + " twice on stripe "
						+ stripe;
			}
			else if (settled && (fenced & (1 << stripe)) == 0) {
				// The Success was judged without this stripe's bytes: it does not report what was sent.
				cause = FailureCause.INCOMPLETE;
				error = unnamed(stripe);
			}
			else {
				error = mismatch(stripe, tallies[stripe], fence.bytes(), fence.checksum(), "a fence");
				cause = FailureCause.INCOMPLETE;
				if (error == null && verdict != null && judgeable()) {
					judged = verdict;
					verdict = null;
					result = judge();
				}
			}
		}
		if (error != null) {
			peer.onRoomError(room, cause, error);
		}
		else if (judged != null) {
			judged.accept(result);
		}
	}

	/**
	 * The rank's Success, which reports every stripe: judged once the fence of each stripe it names arrived.
	 *
	 * @param fenced the stripes the Success names fences on, bit {@code k} for stripe {@code k}
	 */
	void settle(long bytes, long checksum, int fenced, Consumer<String> onVerdict) {
		// The message itself refuses stripe 0 and stripes past the eighth; this session may have fewer.
		if (fenced >>> tallies.length != 0) {
			onVerdict.accept("prefill rank " + connection.endpointName() + " named fences for room " + room
					+ " on stripes 0x" + Integer.toHexString(fenced) + " (expected: among stripes 1.."
					+ (tallies.length - 1) + ")");
			return;
		}
		String result;
		synchronized (this) {
			this.fenced = fenced;
			settled = true;
			settledBytes = bytes;
			settledChecksum = checksum;
			if (!judgeable()) {
				verdict = onVerdict;
				return;
			}
			result = judge();
		}
		onVerdict.accept(result);
	}

	/** @return whether the Success and the fence of every stripe it names arrived; under this object's monitor */
	private boolean judgeable() {
		if (!settled) {
			return false;
		}
		for (int i = 1; i < tallies.length; i++) {
			if ((fenced & (1 << i)) != 0 && fences.get(i) == null) {
				return false;
			}
		}
		return true;
	}

	/**
	 * @return why the Success does not match what landed: a fence on a stripe it names none on, or stripe 0's share
	 *         not what landed there; null when every byte is in place
	 */
	private String judge() {
		long fencedBytes = 0;
		for (int i = 1; i < tallies.length; i++) {
			KVMessage.Fence f = fences.get(i);
			if (f != null && (fenced & (1 << i)) == 0) {
				return unnamed(i);
			}
			fencedBytes += f == null ? 0 : f.bytes();
		}
		return mismatch(0, tallies[0], settledBytes - fencedBytes, settledChecksum, "Success");
	}

	private String unnamed(int stripe) {
		return "prefill rank " + connection.endpointName() + " fenced room " + room + " on stripe " + stripe
				+ ", but its Success named no fence there";
	}

	/** @return why the report does not match what landed on the stripe, or null when every byte is in place */
	private String mismatch(int stripe, Tally landed, long bytes, long checksum, String report) {
		long got = landed == null ? 0 : landed.bytes();
		String where = tallies.length == 1 ? "" : " on stripe " + stripe;
		if (bytes != got) {
			return "prefill rank " + connection.endpointName() + " reported " + report + " for room " + room + " with " + bytes
					+ " bytes sent" + where + ", but " + got + " landed";
		}
		if (connection.checksums) {
			long crc = landed == null ? new Tally(true).checksum() : landed.checksum();
			if (checksum != crc) {
				return "prefill rank " + connection.endpointName() + " reported " + report + " for room " + room + " with CRC32C "
						+ hex(checksum) + where + ", but the bytes that landed have " + hex(crc);
			}
		}
		return null;
	}

	private static String hex(long crc) {
		return crc < 0 ? "none" : String.format("0x%08x", crc);
	}
}
