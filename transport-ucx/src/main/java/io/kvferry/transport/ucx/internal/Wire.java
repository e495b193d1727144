package io.kvferry.transport.ucx.internal;

/**
 * The active messages a UCX connection exchanges, all under one active-message id. Each carries in its UCX header a
 * fixed part: the receiving side's connection id (which connection of the receiver's worker it is for), a sequence
 * number (items are acted on in the order sent and must arrive so), and a type; then the type's fields. Bytes that are
 * not the header (a control message, a payload) travel as the message's data. Big-endian.
 *
 * <pre>
 * i64 connection, i64 seq, u8 type, then per type:
 *   MESSAGE     -                                   data: a control message ({@link RecordCodec})
 *   DATA        DataHeader (record)                 data: the block's first chunk (or the whole block when contiguous)
 *   MORE        -                                   data: the next chunk of the block a DATA opened
 *   GET         DataHeader, i64 srcAddress, i64 srcStride, i32 region   data: none; the receiver reads the bytes
 *   SCATTER     u8 mode (0 bytes, 1 reads), i64 room   data: u8 kind, i32 n, n x (i32 region, i64 dstOffset,
 *                                                   i32 length), then the pieces' bytes one after another (mode 0)
 *                                                   or n x (i32 source region, i64 source address) (mode 1)
 *   KEY         i32 region, i64 base, i64 length    data: the region's packed remote key (a region registered after
 *                                                   the handshake, announced before the first read of it)
 *   ACK         -   (seq: the highest item the receiver finished)
 *   HEARTBEAT   -
 *   CLOSE       -                                   data: the reason, UTF-8
 * </pre>
 */
final class Wire {

	/** The active-message id kvferry registers on a worker. */
	static final int AM_ID = 0x4b;

	/** Bytes of the fixed part. */
	static final int FIXED = 8 + 8 + 1;

	static final int MESSAGE = 1;
	static final int DATA = 2;
	static final int MORE = 3;
	static final int GET = 4;
	static final int ACK = 5;
	static final int HEARTBEAT = 6;
	static final int CLOSE = 7;
	static final int KEY = 8;
	static final int SCATTER = 9;

	/** Most bytes a header may take: the fixed part, a data header and a get's source. */
	static final int MAX_HEADER = FIXED + 64;

	/** Most registered regions one side announces to the other. */
	static final int MAX_REGIONS = 1 << 16;

	private Wire() {
	}

	static String name(int type) {
		return switch (type) {
			case MESSAGE -> "MESSAGE";
			case DATA -> "DATA";
			case MORE -> "MORE";
			case GET -> "GET";
			case ACK -> "ACK";
			case HEARTBEAT -> "HEARTBEAT";
			case CLOSE -> "CLOSE";
			case KEY -> "KEY";
			case SCATTER -> "SCATTER";
			default -> "type " + type;
		};
	}
}
