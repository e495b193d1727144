package io.kvferry.transport.ucx.internal;

import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

import io.kvferry.KVFerryException;
import io.kvferry.spi.CloseReason;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.NativeMemory;
import io.kvferry.spi.ScatterBlock;
import io.kvferry.spi.ScatterHeader;
import io.kvferry.spi.SendGate;
import io.kvferry.spi.SendListener;
import io.kvferry.transport.ucx.UcxDataPath;
import io.netty.buffer.ByteBuf;
import org.jspecify.annotations.Nullable;
import org.openucx.jucx.UcxCallback;
import org.openucx.jucx.ucp.UcpConstants;
import org.openucx.jucx.ucp.UcpEndpoint;
import org.openucx.jucx.ucp.UcpRequest;
import org.openucx.jucx.ucs.UcsConstants;

/**
 * What a connection sends, as active messages: messages and blocks numbered in the order handed over, the regions
 * announced to the peer before its first read of them, and control messages without a number. Each numbered item's
 * {@link SendListener} waits here until the peer acknowledged it. On the node's loop only.
 */
final class Outbound {

	/** A listener waiting for the peer's acknowledgement of the item numbered {@code seq}. */
	private record Waiting(long seq, SendListener listener) {
	}

	/** Largest strided block gathered into one active message. */
	private static final long MAX_GATHER = 8L << 20;

	private final UcxConnection connection;
	private final UcxNode node;
	private final ArrayDeque<Waiting> unacked = new ArrayDeque<>();
	// The regions this side announced to the peer (each before the first read of it), by index.
	private final List<Registrations.Entry> offered = new ArrayList<>();
	// The peer's id of the connection, set when the connection opens: every active message names it.
	private long peerId;
	private long nextSeq = 1;
	private long lastWrite = System.nanoTime();

	Outbound(UcxConnection connection, UcxNode node) {
		this.connection = connection;
		this.node = node;
	}

	/** The connection opened: its sends name the peer's id of it. */
	void opened(long peerId) {
		this.peerId = peerId;
	}

	/** @return when the last active message was handed to UCX, on {@link System#nanoTime} */
	long lastWrite() {
		return lastWrite;
	}

	/** @return the number the next numbered item gets */
	long nextSeq() {
		return nextSeq;
	}

	/** @return how many listeners wait for the peer's acknowledgement */
	int unacked() {
		return unacked.size();
	}

	/** The connection closes: every listener still waiting fails with {@code error}. */
	void failAll(KVFerryException error) {
		Waiting w;
		while ((w = unacked.poll()) != null) {
			w.listener.failed(error);
		}
	}

	/** A control message, numbered; its listener hears {@code written} once the peer acknowledged it. */
	void message(KVMessage message, SendGate gate, SendListener listener) {
		if (!connection.isOpen()) {
			listener.failed(connection.closedError());
			return;
		}
		if (!gate.isOpen()) {
			listener.failed(new KVFerryException("the room of " + message + " stopped before it was written"));
			return;
		}
		ByteBuf body = node.allocator.directBuffer(256);
		try {
			RecordCodec.writeMessage(body, message);
		}
		catch (RuntimeException e) {
			body.release();
			listener.failed(e);
			return;
		}
		long seq = nextSeq++;
		send(Wire.MESSAGE, seq, null, body, body.memoryAddress() + body.readerIndex(), body.readableBytes(),
				UcpConstants.UCP_AM_SEND_FLAG_EAGER);
		track(seq, listener);
	}

	/**
	 * A block, numbered: a read the peer makes (one-sided, when a registered region holds the source), or its bytes as
	 * one active message, gathered, or one per chunk.
	 */
	void block(DataBlock block, SendListener listener) {
		DataHeader h = block.header();
		if (!connection.isOpen()) {
			listener.failed(connection.closedError());
			return;
		}
		if (!block.gate().isOpen()) {
			listener.failed(new KVFerryException("the room of " + h + " stopped before it was written"));
			return;
		}
		boolean sourceContiguous = h.count() == 1 || block.srcStride() == h.chunkLen();
		if (connection.dataPath() == UcxDataPath.ONE_SIDED) {
			long span = sourceContiguous ? h.payloadLength()
					: (h.count() - 1L) * block.srcStride() + h.chunkLen();
			int region = block.srcStride() >= 0 ? offer(block.srcAddress(), span) : -1;
			if (region >= 0) {
				long seq = nextSeq++;
				send(Wire.GET, seq, out -> {
					RecordCodec.write(out, h);
					out.writeLong(block.srcAddress());
					out.writeLong(block.srcStride());
					out.writeInt(region);
				}, null, 0, 0, UcpConstants.UCP_AM_SEND_FLAG_EAGER);
				track(seq, listener);
				return;
			}
			node.unregisteredSource(block.srcAddress());
		}
		boolean destinationContiguous = h.count() == 1 || h.dstStride() == h.chunkLen();
		long seq;
		if (sourceContiguous && destinationContiguous) {
			seq = nextSeq++;
			send(Wire.DATA, seq, out -> RecordCodec.write(out, h), null, block.srcAddress(), h.payloadLength(), 0);
		}
		else if (h.payloadLength() <= MAX_GATHER) {
			// A head slice: one message of its chunks gathered, instead of one per token.
			int n = (int) h.payloadLength();
			ByteBuf gathered = node.allocator.directBuffer(n, n);
			long to = gathered.memoryAddress();
			for (int i = 0; i < h.count(); i++) {
				NativeMemory.copy(block.srcAddress() + i * block.srcStride(), to + (long) i * h.chunkLen(), h.chunkLen());
			}
			gathered.writerIndex(n);
			seq = nextSeq++;
			send(Wire.DATA, seq, out -> RecordCodec.write(out, h), gathered, to, n, 0);
		}
		else {
			seq = nextSeq++;
			send(Wire.DATA, seq, out -> RecordCodec.write(out, h), null, block.srcAddress(), h.chunkLen(), 0);
			for (int i = 1; i < h.count(); i++) {
				seq = nextSeq++;
				send(Wire.MORE, seq, null, null, block.srcAddress() + i * block.srcStride(), h.chunkLen(), 0);
			}
		}
		track(seq, listener);
	}

	/**
	 * The peer reads one run per piece: a piece the sender gathers from strided source chunks (the chunks adjacent on
	 * the receiver) is cut back into one piece per chunk, so that it can still be read one-sided.
	 *
	 * @return the block with every piece one run, the block itself when each already is, or null when the cut would
	 *         make more pieces than a scatter header holds (the bytes then go in the message)
	 */
	static @Nullable ScatterBlock oneRunPieces(ScatterBlock block) {
		ScatterHeader h = block.header();
		int pieces = 0;
		for (int i = 0; i < h.count(); i++) {
			pieces += block.isContiguous(i) ? 1 : h.length(i) / block.srcChunk(i);
			if (pieces > ScatterHeader.MAX_PIECES) {
				return null;
			}
		}
		if (pieces == h.count()) {
			return block;
		}
		int[] regions = new int[pieces];
		long[] offsets = new long[pieces];
		int[] lengths = new int[pieces];
		long[] sources = new long[pieces];
		int[] next = { 0 };
		for (int i = 0; i < h.count(); i++) {
			int region = h.region(i);
			long[] dst = { h.dstOffset(i) };
			block.chunks(i, (address, length) -> {
				int k = next[0]++;
				regions[k] = region;
				offsets[k] = dst[0];
				lengths[k] = length;
				sources[k] = address;
				dst[0] += length;
			});
		}
		return new ScatterBlock(new ScatterHeader(h.room(), h.kind(), pieces, regions, offsets, lengths), sources,
				block.gate());
	}

	/**
	 * Many small pieces of one room as one message: their sources to read (one-sided, when every piece lies in a
	 * registered region) or their bytes gathered after the piece table.
	 */
	void scatter(ScatterBlock given, SendListener listener) {
		ScatterBlock runs = connection.dataPath() == UcxDataPath.ONE_SIDED ? oneRunPieces(given) : null;
		ScatterBlock block = runs != null ? runs : given;
		ScatterHeader h = block.header();
		if (!connection.isOpen()) {
			listener.failed(connection.closedError());
			return;
		}
		if (!block.gate().isOpen()) {
			listener.failed(new KVFerryException("the room of " + h + " stopped before it was written"));
			return;
		}
		int n = h.count();
		int[] regions = null;
		if (connection.dataPath() == UcxDataPath.ONE_SIDED) {
			regions = new int[n];
			for (int i = 0; i < n && regions != null; i++) {
				if (!block.isContiguous(i)) {
					// The peer reads one run per piece: a piece gathered from a strided source goes in the message.
					regions = null;
					break;
				}
				regions[i] = offer(block.srcAddress(i), h.length(i));
				if (regions[i] < 0) {
					node.unregisteredSource(block.srcAddress(i));
					regions = null;
				}
			}
		}
		long payload = regions != null ? 12L * n : h.payloadLength();
		long size = 1 + 4 + 16L * n + payload;
		if (size > Integer.MAX_VALUE) {
			for (int i = 0; i < n; i++) {
				block(block.piece(i), i == n - 1 ? listener : SendListener.NONE);
			}
			return;
		}
		ByteBuf data = node.allocator.directBuffer((int) size, (int) size);
		data.writeByte(h.kind().ordinal()).writeInt(n);
		for (int i = 0; i < n; i++) {
			data.writeInt(h.region(i)).writeLong(h.dstOffset(i)).writeInt(h.length(i));
		}
		if (regions != null) {
			for (int i = 0; i < n; i++) {
				data.writeInt(regions[i]).writeLong(block.srcAddress(i));
			}
		}
		else {
			long[] to = { data.memoryAddress() + data.writerIndex() };
			for (int i = 0; i < n; i++) {
				block.chunks(i, (address, length) -> {
					NativeMemory.copy(address, to[0], length);
					to[0] += length;
				});
			}
			data.writerIndex(data.writerIndex() + (int) h.payloadLength());
		}
		int mode = regions != null ? 1 : 0;
		long seq = nextSeq++;
		send(Wire.SCATTER, seq, out -> out.writeByte(mode).writeLong(h.room()), data, data.memoryAddress(),
				data.readableBytes(), UcpConstants.UCP_AM_SEND_FLAG_EAGER);
		track(seq, listener);
	}

	/**
	 * @return the index under which the peer knows the registered region holding the bytes, announcing a region
	 *         registered after the handshake first; -1 when no registered region holds them
	 */
	private int offer(long address, long span) {
		for (int i = 0; i < offered.size(); i++) {
			if (offered.get(i).holds(address, span)) {
				return i;
			}
		}
		Registrations.Entry[] all = node.registrations();
		int found = Registrations.find(all, address, span);
		if (found < 0 || offered.size() >= Wire.MAX_REGIONS) {
			return -1;
		}
		Registrations.Entry e = all[found];
		int index = offered.size();
		offered.add(e);
		ByteBuf key = node.allocator.directBuffer(e.key().length).writeBytes(e.key());
		send(Wire.KEY, 0, out -> out.writeInt(index).writeLong(e.base()).writeLong(e.length()), key,
				key.memoryAddress(), e.key().length, UcpConstants.UCP_AM_SEND_FLAG_EAGER);
		return index;
	}

	private void track(long seq, SendListener listener) {
		if (listener != SendListener.NONE) {
			unacked.add(new Waiting(seq, listener));
		}
	}

	/** Writes what has no sequence number: acknowledgements, heartbeats, a close. */
	void control(int type, long seq, @Nullable String text) {
		ByteBuf body = null;
		long address = 0;
		long length = 0;
		if (text != null) {
			byte[] b = text.getBytes(StandardCharsets.UTF_8);
			body = node.allocator.directBuffer(b.length).writeBytes(b);
			address = body.memoryAddress();
			length = b.length;
		}
		send(type, seq, null, body, address, length, UcpConstants.UCP_AM_SEND_FLAG_EAGER);
	}

	/** Fields after the fixed part of an active message's header. */
	private interface HeaderFields {
		void write(ByteBuf out);
	}

	private void send(int type, long seq, @Nullable HeaderFields fields, @Nullable ByteBuf body, long data,
			long length, long flags) {
		UcpEndpoint ep = connection.liveEndpoint();
		if (ep == null) {
			if (body != null) {
				body.release();
			}
			return;
		}
		ByteBuf header = node.allocator.directBuffer(Wire.MAX_HEADER, Wire.MAX_HEADER);
		header.writeLong(peerId).writeLong(seq).writeByte(type);
		if (fields != null) {
			fields.write(header);
		}
		lastWrite = System.nanoTime();
		SendDone done = new SendDone(type, header, body);
		try {
			ep.sendAmNonBlocking(Wire.AM_ID, header.memoryAddress(), header.readableBytes(), data, length, flags, done);
		}
		catch (RuntimeException e) {
			// UCX refused the send at once (an endpoint already in error: JUCX throws, and its callback may not run).
			done.onError(UcsConstants.STATUS.UCS_ERR_IO_ERROR, String.valueOf(e.getMessage()));
		}
	}

	/** Releases a sent message's buffers once, and closes the connection when the send failed. */
	private final class SendDone extends UcxCallback {
		private final int type;
		private final ByteBuf header;
		private final @Nullable ByteBuf body;
		private boolean settled;

		SendDone(int type, ByteBuf header, @Nullable ByteBuf body) {
			this.type = type;
			this.header = header;
			this.body = body;
		}

		@Override
		public void onSuccess(UcpRequest request) {
			release();
		}

		@Override
		public void onError(int status, String message) {
			if (release() && status != UcsConstants.STATUS.UCS_ERR_CANCELED) {
				connection.closeWith(new CloseReason(CloseReason.Kind.IO, "UCX send of " + Wire.name(type) + " to "
						+ connection.remoteAddress()
						+ " failed: " + message), false);
			}
		}

		/** @return whether this call released the buffers (false when an earlier one did) */
		private boolean release() {
			if (settled) {
				return false;
			}
			settled = true;
			header.release();
			if (body != null) {
				body.release();
			}
			return true;
		}
	}

	/** The peer finished every item up to {@code seq}: their listeners hear {@code written}. */
	void acknowledged(long seq) {
		Waiting w;
		while ((w = unacked.peek()) != null && w.seq <= seq) {
			unacked.poll();
			w.listener.written();
		}
	}
}
