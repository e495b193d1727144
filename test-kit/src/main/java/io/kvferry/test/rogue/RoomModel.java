package io.kvferry.test.rogue;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.CRC32C;

import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.NativeMemory;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;

/**
 * One decode room of a rogue world as the test sees it: what decode was asked for, how its receiver went, and, for a
 * room asked of the rogue, every byte the rogue wrote for it, counted per granted byte, and what it wrote per stripe
 * (bytes and CRC32C, in the order sent). Guarded by the world.
 */
final class RoomModel {

	/** A write the rogue made for the room: the header and where its payload was read. */
	record Write(int stripe, DataHeader header, long srcAddress, long srcStride) {
	}

	final long id;
	final boolean rogue;
	final int[] pages;
	final int aux;
	final KVReceiver receiver;
	// The good prefill's sender (good rooms only), and whether it was sent.
	@Nullable KVSender sender;
	boolean sent;
	// The test aborted the room on decode.
	boolean aborted;
	// What the receiver reported last, and when (on the world's clock).
	volatile @Nullable KVPoll state;
	volatile long since;
	volatile long opened;
	volatile boolean released;
	// Its states, layers and completion all ended, each checked: its pages may be reused.
	volatile boolean settled;
	// The receiver's completion, subscribed once: completes once the room ended and its pages were released.
	Mono<Void> done = Mono.empty();
	// How the room's completion failed, once it did.
	volatile @Nullable Throwable error;
	volatile boolean verified;
	// Its pages went back to the free list.
	boolean recycled;

	// Rogue rooms: the rogue's source pages for the room's positions, and its aux row; null until first written.
	int @Nullable [] srcPages;
	int srcAux = -1;
	// Per KV buffer, how often each byte of each position's page was written; and the aux row's bytes.
	final byte[][] kvCounts;
	final byte[] auxCounts;
	final long[] stripeBytes = new long[8];
	final CRC32C[] stripeCrc = new CRC32C[8];
	// The writes of granted bytes, for a step that repeats one.
	final List<Write> writes = new ArrayList<>();
	// Nothing but granted bytes, each at most once, no report that lies: an honest finish must then succeed.
	boolean clean = true;
	// The rogue sent a Success or a Failed status for the room.
	boolean reported;
	// Fences sent, per stripe.
	int fenced;
	// A frame was sent that decode must fail the room for: it may never succeed.
	@Nullable String mustFail;
	// Why decode must already have failed the room, on virtual time, once the step that wrote the frame settled.
	@Nullable String refuseNow;
	// The rogue finished the room honestly while it was clean: it must succeed.
	boolean mustSucceed;

	RoomModel(long id, boolean rogue, int[] pages, int aux, KVReceiver receiver, int kvBuffers, int itemLen,
			int auxLen) {
		this.id = id;
		this.rogue = rogue;
		this.pages = pages;
		this.aux = aux;
		this.receiver = receiver;
		this.kvCounts = new byte[rogue ? kvBuffers : 0][pages.length * itemLen];
		this.auxCounts = new byte[rogue && aux >= 0 ? auxLen : 0];
		for (int i = 0; i < stripeCrc.length; i++) {
			stripeCrc[i] = new CRC32C();
		}
	}

	boolean isTerminal() {
		KVPoll s = receiver.poll();
		return s != null && s.isTerminal();
	}

	/** Counts a write's bytes of granted items, and the payload on its stripe; @return whether a byte was written twice */
	boolean count(Write w, byte[] counts, int from, int to) {
		boolean twice = false;
		for (int b = from; b < to; b++) {
			if (++counts[b] > 1) {
				twice = true;
			}
		}
		return twice;
	}

	/** Adds a write's payload, read from the rogue's memory in the order it goes, to its stripe's tally. */
	void tally(Write w) {
		DataHeader h = w.header();
		long len = h.chunkLen();
		for (int c = 0; c < h.count(); c++) {
			ByteBuffer view = NativeMemory.byteBuffer(w.srcAddress() + (h.count() == 1 ? 0 : c * w.srcStride()),
					(int) len);
			stripeCrc[w.stripe()].update(view);
		}
		stripeBytes[w.stripe()] += h.payloadLength();
	}

	/** @return the stripes other than 0 that carried some of the room's bytes, as a Status's fences */
	int fences() {
		int mask = 0;
		for (int s = 1; s < stripeBytes.length; s++) {
			if (stripeBytes[s] > 0) {
				mask |= 1 << s;
			}
		}
		return mask;
	}

	long totalBytes() {
		long total = 0;
		for (long b : stripeBytes) {
			total += b;
		}
		return total;
	}

	/** @return the honest Success: every byte sent, stripe 0's CRC32C, the stripes that fence */
	KVMessage.Status success(boolean checksums) {
		return new KVMessage.Status(id, KVPoll.SUCCESS, 0, "", totalBytes(),
				checksums ? stripeCrc[0].getValue() : KVMessage.NO_CHECKSUM, fences());
	}

	/** @return the honest fence of a stripe */
	KVMessage.Fence fence(int stripe, boolean checksums) {
		return new KVMessage.Fence(id, stripeBytes[stripe], checksums ? stripeCrc[stripe].getValue()
				: KVMessage.NO_CHECKSUM);
	}

	@Override
	public String toString() {
		return (rogue ? "rogue" : "good") + " room " + id + " (pages " + java.util.Arrays.toString(pages) + ", aux "
				+ aux + ", " + receiver.poll() + ")";
	}
}
