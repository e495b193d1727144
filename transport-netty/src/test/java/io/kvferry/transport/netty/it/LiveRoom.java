package io.kvferry.transport.netty.it;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import io.kvferry.HostPort;
import io.kvferry.DecodeKVManager;
import io.kvferry.PrefillKVManager;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.harness.RankMemory;
import reactor.core.publisher.Mono;

/**
 * One room driven by hand on pages the test chooses, so that a test can stop feeding it half way, abort it, or check
 * its destination pages on their own: pattern fill on every prefill rank, a receiver per decode rank, a sender per
 * prefill rank, chunks sent on request.
 */
final class LiveRoom {

	private static final int[] NONE = new int[0];

	final long id;
	final int[] src;
	final int[] dst;
	final int srcRow;
	final int dstRow;
	final List<KVReceiver> receivers = new ArrayList<>();
	final List<KVSender> senders = new ArrayList<>();
	private final List<RankMemory> decodeMemory;

	private LiveRoom(long id, int[] src, int[] dst, int srcRow, int dstRow, List<RankMemory> decodeMemory) {
		this.id = id;
		this.src = src;
		this.dst = dst;
		this.srcRow = srcRow;
		this.dstRow = dstRow;
		this.decodeMemory = decodeMemory;
	}

	/**
	 * Fills the source pages, creates the senders (init only) and then the receivers (with their destinations).
	 *
	 * @param bootstrap where decode finds the prefill instance
	 * @param prefill the prefill ranks of the room's DP group, with their memory
	 * @param decode the decode ranks, with their memory
	 * @param srcRow source aux row, or -1 for none
	 * @param dstRow destination aux row, or -1 for none
	 */
	static LiveRoom open(HostPort bootstrap, long id, List<PrefillKVManager> prefill, List<RankMemory> prefillMemory,
			List<DecodeKVManager> decode, List<RankMemory> decodeMemory, int[] src, int[] dst, int srcRow, int dstRow) {
		LiveRoom room = new LiveRoom(id, src, dst, srcRow, dstRow, decodeMemory);
		for (RankMemory mem : prefillMemory) {
			mem.fill(id, src, srcRow, NONE);
		}
		for (PrefillKVManager p : prefill) {
			KVSender sender = p.sender(id);
			sender.init(src.length, srcRow);
			room.senders.add(sender);
		}
		for (DecodeKVManager d : decode) {
			KVReceiver receiver = d.receiver(bootstrap, id);
			receiver.sendMetadata(dst, dstRow, NONE);
			room.receivers.add(receiver);
		}
		return room;
	}

	/** Sends source pages {@code [from, to)} from every prefill rank. */
	void send(int from, int to) {
		int[] part = Arrays.copyOfRange(src, from, to);
		for (KVSender s : senders) {
			s.send(part, NONE);
		}
	}

	/** Sends every source page from every prefill rank, as one chunk. */
	void sendAll() {
		send(0, src.length);
	}

	/** @return completes when every sender and receiver succeeded; errors (delayed) when one failed */
	Mono<Void> completion() {
		List<Mono<Void>> all = new ArrayList<>();
		senders.forEach(s -> all.add(s.completion()));
		receivers.forEach(r -> all.add(r.completion()));
		return Mono.whenDelayError(all);
	}

	/** @return null when every decode rank holds the room's bytes exactly, else the first mismatch */
	String verify() {
		for (RankMemory mem : decodeMemory) {
			String mismatch = mem.verify(id, dst, dstRow, NONE);
			if (mismatch != null) {
				return mismatch;
			}
		}
		return null;
	}

	/** @return a hash of the destination pages on every decode rank */
	long checksum() {
		long h = 17;
		for (RankMemory mem : decodeMemory) {
			h = h * 31 + mem.checksum(dst);
		}
		return h;
	}

	/** @return pages {@code [from, to)} as an array */
	static int[] range(int from, int to) {
		return java.util.stream.IntStream.range(from, to).toArray();
	}
}
