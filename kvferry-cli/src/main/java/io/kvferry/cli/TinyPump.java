package io.kvferry.cli;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import io.kvferry.MemoryRegion;
import io.kvferry.harness.KVCluster;
import io.kvferry.harness.RankMemory;
import io.kvferry.harness.StagedRoom;
import io.kvferry.spi.NativeMemory;
import io.netty.util.internal.PlatformDependent;

/**
 * The least work that moves scattered pages over TCP: per rank pair one plain connection, whose writer gathers the
 * pieces from the source pages in place ({@code writev} of the page slices, in order) and whose reader scatters the
 * stream on receipt straight into the destination pages ({@code readv} into the page slices). No header, no request,
 * no bookkeeping: both ends know the pieces beforehand. A piece is a run of pages adjacent on both sides in one layer
 * buffer, as kvferry cuts its blocks. Not thread-safe; one run at a time.
 */
final class TinyPump {

	// As many slices as one writev or readv takes at most on Linux (IOV_MAX).
	private static final int SLICES_PER_CALL = 1024;

	private final ByteBuffer[][] sources;
	private final ByteBuffer[][] destinations;
	private final long bytes;

	private TinyPump(ByteBuffer[][] sources, ByteBuffer[][] destinations, long bytes) {
		this.sources = sources;
		this.destinations = destinations;
		this.bytes = bytes;
	}

	/**
	 * The pieces of staged rooms, between prefill rank {@code r} of the rooms' DP group and decode rank {@code r}
	 * (equal TP sizes: each pair holds the same heads).
	 */
	static TinyPump of(KVCluster cluster, List<StagedRoom> rooms) {
		List<RankMemory> decode = cluster.decodeMemory();
		int pairs = decode.size();
		ByteBuffer[][] sources = new ByteBuffer[pairs][];
		ByteBuffer[][] destinations = new ByteBuffer[pairs][];
		long bytes = 0;
		for (int r = 0; r < pairs; r++) {
			List<ByteBuffer> in = new ArrayList<>();
			List<ByteBuffer> out = new ArrayList<>();
			for (StagedRoom room : rooms) {
				List<MemoryRegion> from = cluster.prefillMemory().get(cluster.dpGroup(room.room())).get(r).kvArgs()
						.kvRegions();
				List<MemoryRegion> to = decode.get(r).kvArgs().kvRegions();
				int[] src = room.sourcePages();
				int[] dst = room.destinationPages();
				int skip = room.prefixPages();
				for (int b = 0; b < to.size(); b++) {
					MemoryRegion s = from.get(b);
					MemoryRegion d = to.get(b);
					for (int k = 0; k < dst.length;) {
						int run = 1;
						while (k + run < dst.length && src[skip + k + run] == src[skip + k + run - 1] + 1
								&& dst[k + run] == dst[k + run - 1] + 1) {
							run++;
						}
						int length = run * d.itemLen();
						in.add(NativeMemory.byteBuffer(s.itemAddress(src[skip + k]), length));
						out.add(NativeMemory.byteBuffer(d.itemAddress(dst[k]), length));
						bytes += length;
						k += run;
					}
				}
			}
			sources[r] = in.toArray(new ByteBuffer[0]);
			destinations[r] = out.toArray(new ByteBuffer[0]);
		}
		return new TinyPump(sources, destinations, bytes);
	}

	/** @return pieces over all connections */
	int pieces() {
		int n = 0;
		for (ByteBuffer[] s : sources) {
			n += s.length;
		}
		return n;
	}

	/** @return payload bytes over all connections */
	long bytes() {
		return bytes;
	}

	/** Zeroes every destination piece, so that a check after a run proves the run wrote it. */
	void clearDestinations() {
		for (ByteBuffer[] pair : destinations) {
			for (ByteBuffer piece : pair) {
				PlatformDependent.setMemory(PlatformDependent.directBufferAddress(piece), piece.capacity(), (byte) 0);
			}
		}
	}

	/**
	 * Moves every piece, each rank pair over its own connection with a writer and a reader thread.
	 *
	 * @param streams one connection per rank pair
	 * @return nanoseconds from the first write to the last byte scattered
	 */
	long run(TcpBaseline[] streams) throws IOException {
		List<CompletableFuture<Long>> done = new ArrayList<>();
		long start = System.nanoTime();
		for (int r = 0; r < sources.length; r++) {
			SocketChannel far = streams[r].far();
			ByteBuffer[] to = destinations[r];
			done.add(TcpBaseline.async("kvferry-bench-tiny-reader-" + r, () -> {
				scatter(far, to);
				return System.nanoTime();
			}));
			if (r > 0) {
				SocketChannel near = streams[r].near();
				ByteBuffer[] from = sources[r];
				done.add(TcpBaseline.async("kvferry-bench-tiny-writer-" + r, () -> {
					gather(near, from);
					return 0L;
				}));
			}
		}
		gather(streams[0].near(), sources[0]);
		long end = 0;
		for (CompletableFuture<Long> f : done) {
			end = Math.max(end, TcpBaseline.join(f));
		}
		return end - start;
	}

	private static void gather(SocketChannel c, ByteBuffer[] pieces) throws IOException {
		for (ByteBuffer p : pieces) {
			p.clear();
		}
		for (int from = 0; from < pieces.length;) {
			c.write(pieces, from, Math.min(SLICES_PER_CALL, pieces.length - from));
			while (from < pieces.length && !pieces[from].hasRemaining()) {
				from++;
			}
		}
	}

	private static void scatter(SocketChannel c, ByteBuffer[] pieces) throws IOException {
		for (ByteBuffer p : pieces) {
			p.clear();
		}
		for (int from = 0; from < pieces.length;) {
			if (c.read(pieces, from, Math.min(SLICES_PER_CALL, pieces.length - from)) < 0) {
				throw new EOFException("peer closed with " + (pieces.length - from) + " pieces to go");
			}
			while (from < pieces.length && !pieces[from].hasRemaining()) {
				from++;
			}
		}
	}
}
