package io.kvferry.transport.netty.internal;

import java.nio.ByteBuffer;
import java.util.Arrays;

import io.kvferry.ProtocolException;
import io.kvferry.spi.NativeMemory;
import io.kvferry.spi.PayloadSink;
import io.kvferry.spi.ScatterHeader;
import io.kvferry.transport.netty.internal.frame.ScatterCodec;
import io.netty.buffer.ByteBuf;
import org.jspecify.annotations.Nullable;

/**
 * The part of {@link KVFrameDecoder} that reads {@code DATA_SCATTER} frames: the frame's length is bounded at its
 * prefix, the piece count as soon as the fixed part arrived (so the table buffered before the payload is at most
 * 64 KiB), the whole list is checked ({@link ScatterHeader#validate}) and handed to the listener's
 * {@link KVFrameDecoder.Listener#onScatter} (decode's grant and ledger, piece by piece) before the first payload byte
 * is written. The payload then streams to each piece's sink in turn, never accumulated, or, where the channel reads
 * scattered, lands straight in the next pieces' destinations ({@link #landingZone}): a zone is made only of what the
 * pieces' sinks offer after their grant, each bounded by its piece.
 *
 * <p>Asking for every piece's sink first makes a frame all-or-nothing on the receiver: a piece the grant refuses
 * fails the room at once, and the sinks already handed out for earlier pieces write nothing once the room is no
 * longer live. One instance per decoder; event-loop confined.
 */
final class ScatterReader {

	// Destinations of one scattering read: well below the kernel's IOV_MAX (1,024), and enough for what a read finds
	// on a socket (a few hundred KiB) in 1 KiB pieces.
	static final int MAX_ZONES = 256;

	private final int maxPayload;
	private long body;
	// Pieces of the current frame, or 0 while its fixed part has not been read.
	private int count;
	private int[] regions = new int[0];
	private long[] offsets = new long[0];
	private int[] lengths = new int[0];
	private PayloadSink[] sinks = new PayloadSink[0];
	private int piece;
	private int pieceRemaining;
	// Payload bytes of the current frame not yet handed to a sink or landed.
	private long payloadLeft;
	// Reusable views of the next pieces' destinations for scattering reads, made on first use.
	private @Nullable ByteBuffer[] zones;

	/** @param maxPayload largest payload of one frame */
	ScatterReader(int maxPayload) {
		this.maxPayload = maxPayload;
	}

	/**
	 * A frame's prefix arrived; checks its length before any byte of it is buffered.
	 *
	 * @param length the frame's length field
	 */
	void begin(long length) {
		long min = 1 + ScatterCodec.HEAD_LENGTH + ScatterCodec.PIECE_LENGTH + 1;
		long max = 1 + ScatterCodec.HEAD_LENGTH + (long) ScatterHeader.MAX_PIECES * ScatterCodec.PIECE_LENGTH
				+ maxPayload;
		if (length < min || length > max) {
			throw new ProtocolException("malformed DATA_SCATTER frame: length " + length + " (expected: " + min + ".."
					+ max + ")");
		}
		body = length - 1;
		count = 0;
	}

	/**
	 * Reads the fixed part and the piece table once they are there, checks them and asks for every piece's sink.
	 *
	 * @return false when more bytes are needed
	 */
	boolean readHeader(ByteBuf in, KVFrameDecoder.Listener listener) {
		if (count == 0) {
			if (in.readableBytes() < ScatterCodec.HEAD_LENGTH) {
				return false;
			}
			count = ScatterCodec.count(in, body, maxPayload);
		}
		int n = count;
		if (in.readableBytes() < ScatterCodec.HEAD_LENGTH + n * ScatterCodec.PIECE_LENGTH) {
			return false;
		}
		if (regions.length < n) {
			regions = new int[n];
			offsets = new long[n];
			lengths = new int[n];
			sinks = new PayloadSink[n];
		}
		ScatterHeader header = ScatterCodec.read(in, n, regions, offsets, lengths);
		header.validate(body - ScatterCodec.HEAD_LENGTH - (long) n * ScatterCodec.PIECE_LENGTH);
		Arrays.fill(sinks, 0, n, null);
		listener.onScatter(header, sinks);
		piece = 0;
		pieceRemaining = lengths[0];
		payloadLeft = body - ScatterCodec.HEAD_LENGTH - (long) n * ScatterCodec.PIECE_LENGTH;
		return true;
	}

	/**
	 * Hands the payload's readable bytes to the pieces' sinks, in order.
	 *
	 * @return whether the frame's payload is complete
	 */
	boolean readPayload(ByteBuf in) {
		while (piece < count) {
			int n = Math.min(in.readableBytes(), pieceRemaining);
			if (n == 0) {
				return false;
			}
			PayloadSink sink = sinks[piece];
			if (sink != null) {
				writeSegment(sink, in, n);
			}
			in.skipBytes(n);
			advance(sink, n);
		}
		count = 0;
		return true;
	}

	/** {@code n} bytes of the current piece, at most its remaining bytes, reached its sink. */
	private void advance(@Nullable PayloadSink sink, int n) {
		pieceRemaining -= n;
		payloadLeft -= n;
		if (pieceRemaining == 0) {
			sinks[piece] = null;
			piece++;
			if (piece < count) {
				pieceRemaining = lengths[piece];
			}
			if (sink != null) {
				sink.complete();
			}
		}
	}

	/**
	 * The destinations of the payload's next bytes for one scattering read: the current piece's rest and the pieces
	 * after it, each as its sink offers it ({@link PayloadSink#landingZone}), up to the first piece whose sink offers
	 * none (skipped, or its room ended) or whose destination is not contiguous (it ends the zone). Only between reads,
	 * with no payload byte buffered.
	 *
	 * @param minBytes fewest payload bytes left in the frame worth a scattering read
	 * @param maxBytes most bytes the read may take
	 * @return the zone, or {@code null} when the next bytes must come through the read buffer
	 */
	@Nullable ScatterZone landingZone(int minBytes, int maxBytes) {
		if (count == 0 || piece >= count || payloadLeft < minBytes) {
			return null;
		}
		ByteBuffer[] views = zones;
		if (views == null) {
			views = new ByteBuffer[MAX_ZONES];
			zones = views;
		}
		int parts = 0;
		long total = 0;
		for (int i = piece; i < count && parts < MAX_ZONES && total < maxBytes; i++) {
			PayloadSink s = sinks[i];
			int want = i == piece ? pieceRemaining : lengths[i];
			ByteBuf zone = s == null ? null : s.landingZone(1, (int) Math.min(want, maxBytes - total));
			if (zone == null) {
				break;
			}
			int n = zone.writableBytes();
			boolean direct = zone.hasMemoryAddress();
			long address = direct ? zone.memoryAddress() + zone.writerIndex() : 0;
			// A view owns none of the memory it shows: the zone is the sink's until it is told what landed.
			zone.release();
			if (!direct) {
				break;
			}
			views[parts] = NativeMemory.retarget(views[parts], address, n);
			parts++;
			total += n;
			if (n < want) {
				break;
			}
		}
		return parts == 0 ? null : new ScatterZone(views, parts, total);
	}

	/**
	 * A scattering read into the zone {@link #landingZone} made landed {@code n} bytes: they are the next pieces', in
	 * place already, and are reported to their sinks.
	 *
	 * @return whether the frame's payload is complete
	 */
	boolean landed(int n) {
		int left = n;
		while (left > 0) {
			PayloadSink sink = piece < count ? sinks[piece] : null;
			if (sink == null) {
				throw new IllegalStateException("a scattering read of " + n + " bytes went past the pieces it was "
						+ "offered");
			}
			int k = Math.min(left, pieceRemaining);
			sink.landed(k);
			left -= k;
			advance(sink, k);
		}
		if (piece < count) {
			return false;
		}
		count = 0;
		return true;
	}

	/** Forgets the frame (the stream failed): no sink is written again. */
	void reset() {
		Arrays.fill(sinks, null);
		count = 0;
	}

	/**
	 * Hands a sink the next {@code n} readable bytes of {@code in}. A sink reads a segment's readable bytes without
	 * changing its indices or keeping it, so {@code in} itself, narrowed to those bytes for the call, serves: no slice
	 * object per segment (a page-size-1 frame carries hundreds).
	 */
	static void writeSegment(PayloadSink sink, ByteBuf in, int n) {
		int end = in.writerIndex();
		in.writerIndex(in.readerIndex() + n);
		try {
			sink.write(in);
		}
		finally {
			in.writerIndex(end);
		}
	}
}
