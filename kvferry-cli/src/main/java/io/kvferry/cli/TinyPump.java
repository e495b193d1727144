package io.kvferry.cli;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

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

	private final RoomPieces pieces;
	private final ByteBuffer[][] sources;
	private final ByteBuffer[][] destinations;
	private final long bytes;

	/** A pump of {@code pieces}, whose memory the caller keeps alive while it runs. */
	TinyPump(RoomPieces pieces) {
		this.pieces = pieces;
		this.bytes = pieces.bytes();
		int pairs = pieces.pairs();
		this.sources = new ByteBuffer[pairs][];
		this.destinations = new ByteBuffer[pairs][];
		for (int r = 0; r < pairs; r++) {
			int n = pieces.pieces()[r].length / 3;
			sources[r] = new ByteBuffer[n];
			destinations[r] = new ByteBuffer[n];
			for (int i = 0; i < n; i++) {
				sources[r][i] = pieces.view(r, i, true);
				destinations[r][i] = pieces.view(r, i, false);
			}
		}
	}

	/** @return pieces over all connections */
	int pieces() {
		return pieces.count();
	}

	/** @return payload bytes over all connections */
	long bytes() {
		return bytes;
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
