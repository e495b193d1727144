package io.kvferry.transport.netty.internal;

import java.util.List;

import io.kvferry.ProtocolException;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.PayloadSink;
import io.kvferry.spi.ScatterHeader;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.ByteToMessageDecoder;

/**
 * Reads the kvferry byte stream (see {@link KVFrameCodec} for the format): the peer's preface, then handshake frames,
 * control frames, heartbeats and data frames, reporting each to a {@link Listener}. Produces no messages for the
 * pipeline. Framing only: which frame may come when (the handshake order) is the listener's to enforce.
 *
 * <p>Memory: nothing is allocated from a length the peer announces. A frame's length is checked against its type's
 * bound as soon as its 5-byte prefix arrives; a control body is cumulated only as its bytes arrive, and counts inside
 * a body are checked against the bytes present before any array is made.
 *
 * <p>Data payloads are streamed, never accumulated: when a data header is complete the listener's
 * {@link Listener#onData} gives a sink, and each read's bytes of that payload go to {@link PayloadSink#write} as a
 * slice of the inbound buffer (its readable bytes are only this frame's). The slice is valid during the call only; this
 * decoder releases the inbound buffers. A {@code null} sink skips the payload. A scatter frame's pieces each get a
 * sink the same way, all asked for before its first payload byte ({@link ScatterReader}).
 *
 * <p>Any failure (malformed input, or an exception from the listener or a sink) is reported once to
 * {@link Listener#onFailure}, the rest of the input is discarded and the channel is closed; nothing escapes into the
 * pipeline. One instance per channel (stateful, not sharable); all calls on the channel's event loop.
 */
public final class KVFrameDecoder extends ByteToMessageDecoder {

	/** What the decoder reports; called on the channel's event loop, in stream order. */
	public interface Listener {

		/** The peer's preface was valid. */
		void onPreface(int version);

		/** A control message arrived. */
		void onMessage(KVMessage message);

		/** A heartbeat arrived. */
		void onHeartbeat();

		/** The peer's {@code AUTH} frame arrived (its flags and nonce). */
		void onAuth(KVFrameCodec.Auth auth);

		/** The peer's {@code AUTH_PROOF} frame arrived. */
		void onAuthProof(byte[] proof);

		/**
		 * A data header arrived.
		 *
		 * @return where the payload goes, or {@code null} to skip it
		 */
		PayloadSink onData(DataHeader header);

		/**
		 * A scatter frame's piece table arrived: sets each piece's sink in {@code sinks} (handed filled with null), as
		 * {@link #onData} would piece by piece.
		 */
		default void onScatter(ScatterHeader header, PayloadSink[] sinks) {
			for (int i = 0; i < header.count(); i++) {
				sinks[i] = onData(header.piece(i));
			}
		}

		/**
		 * A same-host frame arrived ({@link KVFrameCodec#isExtensionType}); {@code body} is valid during the call.
		 * Called only by peers that turned the same-host path on, so the default refuses it.
		 */
		default void onExtension(int type, ByteBuf body) {
			throw new ProtocolException("unexpected " + KVFrameCodec.typeName(type) + " frame: the same-host path is "
					+ "off here");
		}

		/**
		 * The stream failed: a {@link ProtocolException} for malformed input, another exception when a callback or a
		 * sink threw. The decoder closes the channel right after and reports nothing more.
		 */
		void onFailure(Throwable cause);
	}

	private enum State {
		PREFACE, FRAME_PREFIX, CONTROL_BODY, DATA_HEADER, DATA_PAYLOAD, SCATTER_HEADER, SCATTER_PAYLOAD, FAILED
	}

	private final int expectedVersion;
	private final int maxFrameLength;
	private final Listener listener;
	private final ScatterReader scatter;

	private State state = State.PREFACE;
	private int frameType;
	private int bodyLength;
	private long payloadRemaining;
	private PayloadSink sink;
	// The landing zone handed out for the coming read, if any: a read into it reaches decode() as this very buffer.
	private ByteBuf offered;
	// The socket's receive low-water mark while payloads land, or null (NIO, TLS, tests without a socket).
	private ReceiveLowWater lowWater;
	// Whether the channel reads a ScatterZone with one scattering read (LandingNioSocketChannel).
	private boolean scatterLanding;

	/**
	 * @param expectedVersion the protocol version the peer must announce
	 * @param maxFrameLength largest control body and data payload accepted
	 * @param listener receives what arrives
	 */
	public KVFrameDecoder(int expectedVersion, int maxFrameLength, Listener listener) {
		this.expectedVersion = expectedVersion;
		this.maxFrameLength = maxFrameLength;
		this.listener = listener;
		this.scatter = new ScatterReader(maxFrameLength);
	}

	/**
	 * Lets landing reads wait for larger batches: while a payload lands, the socket's receive low-water mark is raised
	 * to the bytes the next read will certainly find, and is back to 1 whenever the next bytes may be anything else.
	 * Only for a socket whose bytes reach this decoder unchanged (no TLS).
	 */
	void lowWater(ReceiveLowWater mark) {
		this.lowWater = mark;
	}

	/**
	 * Lets scatter frames' pieces land straight in their destinations: the channel reads a {@link ScatterZone} with
	 * one scattering read. Only for a channel that does ({@link LandingNioSocketChannel}), without TLS.
	 */
	void scatterLanding(boolean on) {
		this.scatterLanding = on;
	}

	/**
	 * A read into the landing zone offered for it holds only payload bytes already in place: it is reported to the
	 * sink and released here, never cumulated (cumulating could copy it, and nothing is left to decode in it).
	 */
	@Override
	public void channelRead(ChannelHandlerContext ctx, Object msg) throws Exception {
		if (msg != offered || offered == null) {
			super.channelRead(ctx, msg);
			return;
		}
		offered = null;
		ByteBuf zone = (ByteBuf) msg;
		try {
			if (zone instanceof ScatterZone pieces) {
				landScattered(pieces.landed());
				return;
			}
			int n = zone.readableBytes();
			if (n > 0 && state == State.DATA_PAYLOAD && sink != null && n <= payloadRemaining) {
				sink.landed(n);
				payloadRemaining -= n;
				if (payloadRemaining == 0) {
					finishPayload();
				}
				else if (lowWater != null) {
					lowWater.expect(payloadRemaining >= LandingRecvByteBufAllocator.MIN_LANDING ? payloadRemaining : 0);
				}
			}
			else if (n > 0) {
				throw new IllegalStateException("a read of " + n + " bytes into a landing zone that is no longer "
						+ "the payload's (" + state + ", " + payloadRemaining + " payload bytes left)");
			}
		}
		catch (Exception e) {
			fail(ctx, zone, e);
		}
		finally {
			zone.release();
		}
	}

	private void landScattered(int n) {
		if (n > 0 && state == State.SCATTER_PAYLOAD) {
			if (scatter.landed(n)) {
				state = State.FRAME_PREFIX;
			}
		}
		else if (n > 0) {
			throw new IllegalStateException("a scattering read of " + n + " bytes while no scatter frame's payload is "
					+ "being read (" + state + ")");
		}
	}

	@Override
	protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
		try {
			decodeAvailable(in);
		}
		catch (Exception e) {
			fail(ctx, in, e);
		}
	}

	@Override
	protected void decodeLast(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
		decode(ctx, in, out);
		if (state == State.FAILED) {
			return;
		}
		boolean midFrame = state == State.CONTROL_BODY || state == State.DATA_HEADER || state == State.DATA_PAYLOAD
				|| state == State.SCATTER_HEADER || state == State.SCATTER_PAYLOAD || in.isReadable();
		if (midFrame) {
			fail(ctx, in, new ProtocolException("connection closed in the middle of a "
					+ (state == State.PREFACE ? "preface" : KVFrameCodec.typeName(frameType) + " frame")));
		}
	}

	/**
	 * The destination of the current data payload's next bytes when the socket may read straight into it: only between
	 * reads, mid-payload, with nothing buffered and a sink that offers its memory ({@link PayloadSink#landingZone}).
	 * The buffer then reaches {@link #channelRead} like any read, and its bytes are reported to the sink with
	 * {@link PayloadSink#landed} instead of being written. Mid scatter frame, on a channel that reads scattered
	 * ({@link #scatterLanding}), it is a {@link ScatterZone} over the next pieces' destinations. Never offer one when
	 * another handler (TLS) transforms the bytes before this decoder.
	 *
	 * @param minBytes fewest contiguous destination bytes worth a direct read
	 * @param maxBytes most bytes the read may take
	 * @return a buffer over {@code minBytes..maxBytes} destination bytes, never past the payload's end (for a scatter
	 *         frame: with at least {@code minBytes} of the frame's payload left); or {@code null}
	 */
	public ByteBuf landingZone(int minBytes, int maxBytes) {
		offered = null;
		if (state == State.SCATTER_PAYLOAD && scatterLanding && !internalBuffer().isReadable()) {
			offered = scatter.landingZone(minBytes, maxBytes);
			return offered;
		}
		if (state != State.DATA_PAYLOAD || sink == null || payloadRemaining < minBytes
				|| internalBuffer().isReadable()) {
			return null;
		}
		offered = sink.landingZone(minBytes, (int) Math.min(maxBytes, payloadRemaining));
		if (lowWater != null) {
			lowWater.expect(offered != null ? offered.writableBytes() : 0);
		}
		return offered;
	}

	private void decodeAvailable(ByteBuf in) {
		for (;;) {
			switch (state) {
				case PREFACE:
					if (!readPreface(in)) {
						return;
					}
					break;
				case FRAME_PREFIX:
					if (!readFramePrefix(in)) {
						return;
					}
					break;
				case CONTROL_BODY: {
					if (in.readableBytes() < bodyLength) {
						return;
					}
					ByteBuf body = in.readSlice(bodyLength);
					state = State.FRAME_PREFIX;
					if (frameType == KVFrameCodec.TYPE_AUTH) {
						listener.onAuth(KVFrameCodec.decodeAuth(body));
					}
					else if (frameType == KVFrameCodec.TYPE_AUTH_PROOF) {
						listener.onAuthProof(KVFrameCodec.decodeAuthProof(body));
					}
					else if (KVFrameCodec.isExtensionType(frameType)) {
						listener.onExtension(frameType, body);
					}
					else {
						listener.onMessage(KVFrameCodec.decode(frameType, body));
					}
					break;
				}
				case DATA_HEADER:
					if (!readDataHeader(in)) {
						return;
					}
					break;
				case DATA_PAYLOAD:
					if (!readPayload(in)) {
						return;
					}
					break;
				case SCATTER_HEADER:
					if (!scatter.readHeader(in, listener)) {
						return;
					}
					state = State.SCATTER_PAYLOAD;
					break;
				case SCATTER_PAYLOAD:
					if (!scatter.readPayload(in)) {
						return;
					}
					state = State.FRAME_PREFIX;
					break;
				default:
					in.skipBytes(in.readableBytes());
					return;
			}
		}
	}

	private boolean readPreface(ByteBuf in) {
		if (in.readableBytes() < 4) {
			return false;
		}
		int magic = in.getInt(in.readerIndex());
		if (magic != KVFrameCodec.MAGIC) {
			// TLS records start with a content type and major version 3: a handshake (0x16) is how a TLS client meets a
			// plain listener, an alert (0x15) how a TLS listener answers a plain client.
			int record = magic >>> 16;
			String hint = record == 0x1603 ? " (a TLS handshake: the peer uses TLS, this side does not)"
					: record == 0x1503 ? " (a TLS alert: the peer requires TLS, this side does not use it)" : "";
			throw new ProtocolException(String.format(
					"not a kvferry peer: stream starts with 0x%08x (expected: 0x%08x \"KVFR\")%s", magic,
					KVFrameCodec.MAGIC, hint));
		}
		if (in.readableBytes() < KVFrameCodec.PREFACE_LENGTH) {
			return false;
		}
		int version = in.getUnsignedShort(in.readerIndex() + 4);
		in.skipBytes(KVFrameCodec.PREFACE_LENGTH);
		if (version != expectedVersion) {
			throw new ProtocolException("incompatible kvferry protocol version : " + version + " (expected: "
					+ expectedVersion + "): the peer runs " + (version < expectedVersion ? "an older" : "a newer")
					+ " kvferry release; run the same release on both sides");
		}
		state = State.FRAME_PREFIX;
		listener.onPreface(version);
		return true;
	}

	private boolean readFramePrefix(ByteBuf in) {
		if (in.readableBytes() < KVFrameCodec.FRAME_PREFIX_LENGTH) {
			return false;
		}
		long length = in.getUnsignedInt(in.readerIndex());
		int type = in.getUnsignedByte(in.readerIndex() + 4);
		frameType = type;
		if (length < 1) {
			throw new ProtocolException("malformed frame: length 0 (expected: >= 1)");
		}
		long body = length - 1;
		if (type == KVFrameCodec.TYPE_HEARTBEAT) {
			if (body != 0) {
				throw new ProtocolException("malformed HEARTBEAT frame: body of " + body + " bytes (expected: 0)");
			}
			in.skipBytes(KVFrameCodec.FRAME_PREFIX_LENGTH);
			listener.onHeartbeat();
			return true;
		}
		if (type == KVFrameCodec.TYPE_DATA) {
			long payload = body - KVFrameCodec.DATA_HEADER_LENGTH;
			if (payload < 0 || payload > maxFrameLength) {
				throw new ProtocolException("malformed DATA frame: length " + length + " (expected: "
						+ (1 + KVFrameCodec.DATA_HEADER_LENGTH) + ".." + (1 + KVFrameCodec.DATA_HEADER_LENGTH
								+ (long) maxFrameLength) + ")");
			}
			in.skipBytes(KVFrameCodec.FRAME_PREFIX_LENGTH);
			payloadRemaining = payload;
			state = State.DATA_HEADER;
			return true;
		}
		if (type == KVFrameCodec.TYPE_DATA_SCATTER) {
			scatter.begin(length);
			in.skipBytes(KVFrameCodec.FRAME_PREFIX_LENGTH);
			state = State.SCATTER_HEADER;
			return true;
		}
		if (AuthFrames.isAuthType(type)) {
			int min = AuthFrames.authMinBodyLength(type);
			int max = AuthFrames.authMaxBodyLength(type);
			if (body < min || body > max) {
				throw new ProtocolException("malformed " + KVFrameCodec.typeName(type) + " frame: body of " + body
						+ " bytes (expected: " + (min == max ? String.valueOf(min) : min + ".." + max) + ")");
			}
			in.skipBytes(KVFrameCodec.FRAME_PREFIX_LENGTH);
			bodyLength = (int) body;
			state = State.CONTROL_BODY;
			return true;
		}
		if (!KVFrameCodec.isControlType(type) && !KVFrameCodec.isExtensionType(type)) {
			throw new ProtocolException("unknown frame type " + KVFrameCodec.typeName(type) + " (length " + length
					+ ")");
		}
		if (body > maxFrameLength) {
			throw new ProtocolException("malformed " + KVFrameCodec.typeName(type) + " frame: body of " + body
					+ " bytes exceeds maxFrameLength " + maxFrameLength);
		}
		in.skipBytes(KVFrameCodec.FRAME_PREFIX_LENGTH);
		bodyLength = (int) body;
		state = State.CONTROL_BODY;
		return true;
	}

	private boolean readDataHeader(ByteBuf in) {
		if (in.readableBytes() < KVFrameCodec.DATA_HEADER_LENGTH) {
			return false;
		}
		DataHeader header = KVFrameCodec.decodeDataHeader(in);
		if (header.payloadLength() != payloadRemaining) {
			throw new ProtocolException("malformed DATA frame: header announces chunkLen " + header.chunkLen()
					+ " x count " + header.count() + " = " + header.payloadLength()
					+ " payload bytes but the frame has " + payloadRemaining);
		}
		state = State.DATA_PAYLOAD;
		sink = listener.onData(header);
		return true;
	}

	private boolean readPayload(ByteBuf in) {
		if (payloadRemaining > 0) {
			int n = (int) Math.min(in.readableBytes(), payloadRemaining);
			if (n == 0) {
				return false;
			}
			if (sink != null) {
				ScatterReader.writeSegment(sink, in, n);
			}
			in.skipBytes(n);
			payloadRemaining -= n;
			if (payloadRemaining > 0) {
				return false;
			}
		}
		finishPayload();
		return true;
	}

	private void finishPayload() {
		PayloadSink done = sink;
		sink = null;
		state = State.FRAME_PREFIX;
		if (lowWater != null) {
			lowWater.expect(0);
		}
		if (done != null) {
			done.complete();
		}
	}

	private void fail(ChannelHandlerContext ctx, ByteBuf in, Throwable cause) {
		if (state == State.FAILED) {
			return;
		}
		state = State.FAILED;
		sink = null;
		scatter.reset();
		in.skipBytes(in.readableBytes());
		try {
			listener.onFailure(cause);
		}
		finally {
			ctx.close();
		}
	}
}
