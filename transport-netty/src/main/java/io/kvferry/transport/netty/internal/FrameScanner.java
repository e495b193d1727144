package io.kvferry.transport.netty.internal;

import io.kvferry.ProtocolException;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.RegionKind;
import io.kvferry.transport.netty.internal.frame.ScatterCodec;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

/**
 * Follows one direction of a kvferry byte stream for {@link FrameLogger}: finds the preface and every frame's prefix in
 * the buffers as they pass, gathers the few head bytes that name a frame's room and lengths, and describes each frame
 * in one line. Payloads and bodies are skipped by count, never read or copied: at most the prefix and
 * {@value #MAX_HEAD} head bytes of a frame are.
 *
 * <p>It frames the stream itself rather than asking {@link KVFrameDecoder}, so the lines say what crossed the wire even
 * when the two sides disagree about it: a frame the decoder refuses is described before the decoder sees it. Once the
 * stream stops making sense (a wrong magic, a zero length) it says so once and describes nothing more. Event-loop
 * confined.
 *
 * <p>The two scanners of a connection share its {@link Stripe}: a {@code HELLO} makes it stripe 0, a {@code JOIN} or
 * {@code JOINED} stripe k, and every frame described after that names it. A {@code JOIN}'s session token, which lets
 * whoever holds it join the session, is skipped like a payload.
 */
final class FrameScanner {

	/** Most body bytes read of one frame: a {@code DATA_SHM} header and its slot. */
	static final int MAX_HEAD = KVFrameCodec.DATA_HEADER_LENGTH + 4;

	private enum State {
		PREFACE, PREFIX, HEAD, SKIP, LOST
	}

	/** Receives each frame's line. */
	interface Lines {
		void line(String direction, String description);
	}

	/** The stripe a connection carries, once a frame named it; shared by the scanners of its two directions. */
	static final class Stripe {

		private int index = -1;
	}

	private final String direction;
	private final Stripe stripe;
	private final byte[] bytes = new byte[KVFrameCodec.FRAME_PREFIX_LENGTH + MAX_HEAD];
	// Reads the gathered bytes big-endian; an unpooled heap wrapper, which holds no memory of its own to release.
	private final ByteBuf gathered = Unpooled.wrappedBuffer(bytes);
	private State state = State.PREFACE;
	private int have;
	private int need = KVFrameCodec.PREFACE_LENGTH;
	private long skip;
	private long length;
	private int type;

	/**
	 * @param direction {@code IN} or {@code OUT}, the start of each line
	 * @param stripe the connection's stripe, shared with the scanner of the other direction
	 */
	FrameScanner(String direction, Stripe stripe) {
		this.direction = direction;
		this.stripe = stripe;
	}

	/** Follows the readable bytes of {@code buf}, which it neither reads (its indices stay) nor releases. */
	void scan(ByteBuf buf, Lines out) {
		int i = buf.readerIndex();
		int end = buf.writerIndex();
		while (i < end && state != State.LOST) {
			if (state == State.SKIP) {
				int n = (int) Math.min(end - i, skip);
				i += n;
				skip -= n;
				if (skip == 0) {
					expectPrefix();
				}
				continue;
			}
			int n = Math.min(end - i, need - have);
			buf.getBytes(i, bytes, have, n);
			i += n;
			have += n;
			if (have == need) {
				step(out);
			}
		}
	}

	private void step(Lines out) {
		switch (state) {
			case PREFACE: {
				int magic = gathered.getInt(0);
				if (magic != KVFrameCodec.MAGIC) {
					lost(out, String.format("not a kvferry stream: starts with 0x%08x (expected: 0x%08x \"KVFR\")",
							magic, KVFrameCodec.MAGIC));
					return;
				}
				out.line(direction, "PREFACE version=" + gathered.getUnsignedShort(4));
				expectPrefix();
				return;
			}
			case PREFIX: {
				length = gathered.getUnsignedInt(0);
				type = gathered.getUnsignedByte(4);
				if (length < 1) {
					lost(out, "frame of length 0 (expected: >= 1)");
					return;
				}
				if (type == KVFrameCodec.TYPE_HELLO) {
					stripe.index = 0;
				}
				int head = (int) Math.min(headLength(type), length - 1);
				if (head == 0) {
					out.line(direction, named() + " length=" + length);
					skipBody(length - 1);
					return;
				}
				state = State.HEAD;
				need = KVFrameCodec.FRAME_PREFIX_LENGTH + head;
				return;
			}
			default: {
				int head = need - KVFrameCodec.FRAME_PREFIX_LENGTH;
				out.line(direction, describe(head) + " length=" + length);
				skipBody(length - 1 - head);
			}
		}
	}

	/** @return the frame's type, room and lengths, from its {@code head} bytes after the prefix */
	private String describe(int head) {
		int at = KVFrameCodec.FRAME_PREFIX_LENGTH;
		if (head < headLength(type)) {
			return named() + " (body of " + head + " bytes, too short for its header)";
		}
		switch (type) {
			case KVFrameCodec.TYPE_JOIN -> stripe.index = gathered.getInt(at + 8);
			case KVFrameCodec.TYPE_JOINED -> stripe.index = gathered.getInt(at);
			default -> {
			}
		}
		StringBuilder line = new StringBuilder(named());
		switch (type) {
			case KVFrameCodec.TYPE_DATA, KVFrameCodec.TYPE_DATA_SHM -> {
				try {
					DataHeader h = KVFrameCodec.decodeDataHeader(gathered.setIndex(at, at + head));
					line.append(" room=").append(h.room()).append(" kind=").append(h.kind())
							.append(" region=").append(h.region()).append(" offset=").append(h.dstOffset())
							.append(" chunk=").append(h.chunkLen()).append('x').append(h.count())
							.append(" payload=").append(h.payloadLength());
				}
				catch (ProtocolException e) {
					line.append(" (").append(e.getMessage()).append(')');
				}
				if (type == KVFrameCodec.TYPE_DATA_SHM) {
					line.append(" slot=").append(gathered.getInt(at + KVFrameCodec.DATA_HEADER_LENGTH));
				}
			}
			case KVFrameCodec.TYPE_DATA_SCATTER -> {
				int kind = gathered.getUnsignedByte(at + 8);
				long pieces = gathered.getInt(at + 9);
				line.append(" room=").append(gathered.getLong(at)).append(" kind=")
						.append(kind < RegionKind.values().length ? RegionKind.fromOrdinal(kind).name() : kind)
						.append(" pieces=").append(pieces).append(" payload=")
						.append(length - 1 - ScatterCodec.HEAD_LENGTH - pieces * ScatterCodec.PIECE_LENGTH);
			}
			case KVFrameCodec.TYPE_RENEW -> line.append(" rooms=").append(gathered.getInt(at));
			case KVFrameCodec.TYPE_JOIN, KVFrameCodec.TYPE_JOINED -> {
				// The stripe is already named.
			}
			default -> line.append(" room=").append(gathered.getLong(at));
		}
		return line.toString();
	}

	/** @return the frame's type and, once known, the connection's stripe */
	private String named() {
		String name = KVFrameCodec.typeName(type);
		return stripe.index < 0 ? name : name + " stripe=" + stripe.index;
	}

	/**
	 * @return body bytes that name a frame of {@code type}: a data header, a scatter frame's fixed part, the room that
	 *         starts the body of a room's control frame, a renewal's count, the stripe of a {@code JOIN} (after its
	 *         token) or {@code JOINED}; 0 for a frame described by its type alone
	 */
	private static int headLength(int type) {
		return switch (type) {
			case KVFrameCodec.TYPE_DATA -> KVFrameCodec.DATA_HEADER_LENGTH;
			case KVFrameCodec.TYPE_DATA_SHM -> MAX_HEAD;
			case KVFrameCodec.TYPE_DATA_SCATTER -> ScatterCodec.HEAD_LENGTH;
			case KVFrameCodec.TYPE_TRANSFER_REQUEST, KVFrameCodec.TYPE_STATUS, KVFrameCodec.TYPE_ABORT,
					KVFrameCodec.TYPE_ABORT_ACK, KVFrameCodec.TYPE_FENCE -> 8;
			case KVFrameCodec.TYPE_RENEW, KVFrameCodec.TYPE_JOINED -> 4;
			case KVFrameCodec.TYPE_JOIN -> 8 + 4;
			default -> 0;
		};
	}

	private void skipBody(long bytes) {
		skip = bytes;
		if (skip > 0) {
			state = State.SKIP;
		}
		else {
			expectPrefix();
		}
	}

	private void expectPrefix() {
		state = State.PREFIX;
		have = 0;
		need = KVFrameCodec.FRAME_PREFIX_LENGTH;
	}

	private void lost(Lines out, String why) {
		state = State.LOST;
		out.line(direction, why + "; no more frames are described in this direction");
	}
}
