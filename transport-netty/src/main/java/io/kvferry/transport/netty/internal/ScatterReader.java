package io.kvferry.transport.netty.internal;

import java.util.Arrays;

import io.kvferry.ProtocolException;
import io.kvferry.spi.PayloadSink;
import io.kvferry.spi.ScatterHeader;
import io.kvferry.transport.netty.internal.frame.ScatterCodec;
import io.netty.buffer.ByteBuf;

/**
 * The part of {@link KVFrameDecoder} that reads {@code DATA_SCATTER} frames: the frame's length is bounded at its
 * prefix, the piece count as soon as the fixed part arrived (so the table buffered before the payload is at most
 * 64 KiB), the whole list is checked ({@link ScatterHeader#validate}) and handed to the listener's
 * {@link KVFrameDecoder.Listener#onScatter} (decode's grant and ledger, piece by piece) before the first payload byte
 * is written. The payload then streams to each piece's sink in turn, never accumulated.
 *
 * <p>Asking for every piece's sink first makes a frame all-or-nothing on the receiver: a piece the grant refuses
 * fails the room at once, and the sinks already handed out for earlier pieces write nothing once the room is no
 * longer live. One instance per decoder; event-loop confined.
 */
final class ScatterReader {

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
			pieceRemaining -= n;
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
