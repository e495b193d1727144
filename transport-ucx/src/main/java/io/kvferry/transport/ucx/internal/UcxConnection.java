package io.kvferry.transport.ucx.internal;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

import io.kvferry.HostPort;
import io.kvferry.KVFerryException;
import io.kvferry.ProtocolException;
import io.kvferry.RoomPath;
import io.kvferry.spi.Block;
import io.kvferry.spi.CloseReason;
import io.kvferry.spi.ConnectionHandler;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.NativeMemory;
import io.kvferry.spi.PayloadSink;
import io.kvferry.spi.RegionKind;
import io.kvferry.spi.ScatterBlock;
import io.kvferry.spi.ScatterHeader;
import io.kvferry.spi.SendGate;
import io.kvferry.spi.SendListener;
import io.kvferry.transport.ucx.UcxDataPath;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import org.jspecify.annotations.Nullable;
import org.openucx.jucx.UcxCallback;
import org.openucx.jucx.ucp.UcpAmData;
import org.openucx.jucx.ucp.UcpConstants;
import org.openucx.jucx.ucp.UcpEndpoint;
import org.openucx.jucx.ucp.UcpEndpointParams;
import org.openucx.jucx.ucp.UcpRemoteKey;
import org.openucx.jucx.ucp.UcpRequest;
import org.openucx.jucx.ucs.UcsConstants;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * One connection between two UCX workers: an endpoint each way (each side connects to the other's worker address),
 * messages and blocks as active messages numbered in the order handed over, and decode's reads of prefill's pages.
 * Everything but the {@link KVConnection} entry points runs on the node's loop.
 *
 * <p>A message's or block's {@link SendListener} hears {@code written} once the peer acknowledged it: the peer then
 * finished with it and with everything before it, so that no read of this side's memory is still to come (a Success
 * acknowledged means decode read every byte it reports). A close asks the peer to close too and waits (at most the
 * handshake timeout) for its answer, which it sends once no read of its own is in flight; only then does
 * {@link ConnectionHandler#onClose} run.
 */
final class UcxConnection implements KVConnection {

	private static final Logger log = LoggerFactory.getLogger(UcxConnection.class);

	private enum State {
		CONNECTING, OPEN, CLOSING, CLOSED
	}

	/** A remote region decode may read, with its unpacked key. */
	private record Remote(long base, long length, UcpRemoteKey key) {
	}

	/** A listener waiting for the peer's acknowledgement of the item numbered {@code seq}. */
	private record Waiting(long seq, SendListener listener) {
	}

	/** Largest strided block gathered into one active message. */
	private static final long MAX_GATHER = 8L << 20;

	/** Most registered regions one side announces to the other. */
	private static final int MAX_REGIONS = 1 << 16;

	final long id;
	private final UcxNode node;
	private final HostPort remote;
	private final boolean accepted;
	private final Inbound inbound = new Inbound(this);
	private final ArrayDeque<Waiting> unacked = new ArrayDeque<>();
	private final Sinks.Empty<Void> closed = Sinks.empty();
	// Sends handed over before the peer was ready (prefill waits for decode's first message).
	private final List<Runnable> deferred = new ArrayList<>();
	private volatile State state = State.CONNECTING;
	private volatile @Nullable ConnectionHandler handler;
	private volatile UcxDataPath path = UcxDataPath.ACTIVE_MESSAGES;
	private @Nullable UcpEndpoint endpoint;
	private long peerId;
	// The regions this side offered the peer (the handshake's, then those announced later), by index.
	private final List<Registrations.Entry> offered = new ArrayList<>();
	private final List<Remote> peerRegions = new ArrayList<>();
	private long nextSeq = 1;
	private long expectedSeq = 1;
	private long ackedSent;
	private long lastRead = System.nanoTime();
	private long lastWrite = System.nanoTime();
	private boolean pumpScheduled;
	// Prefill: decode's first message came, so what it sends from now on is read (prefill's own sends wait for the
	// task that opens the connection).
	private boolean peerReady;
	// Malformed input was seen: nothing more is read while the close is on its way.
	private boolean broken;
	private @Nullable CloseReason reason;
	private boolean closeSent;
	private boolean peerAnswered;
	private boolean lingerOver;

	UcxConnection(UcxNode node, long id, HostPort remote, boolean accepted, @Nullable ConnectionHandler handler) {
		this.node = node;
		this.id = id;
		this.remote = remote;
		this.accepted = accepted;
		this.handler = handler;
	}

	@Override
	public String id() {
		return "ucx-" + Long.toHexString(id).substring(0, Math.min(8, Long.toHexString(id).length()))
				+ (accepted ? "s" : "c");
	}

	@Override
	public HostPort remoteAddress() {
		return remote;
	}

	@Override
	public RoomPath path() {
		return new RoomPath(path == UcxDataPath.ONE_SIDED ? RoomPath.Kind.UCX_ONE_SIDED
				: RoomPath.Kind.UCX_ACTIVE_MESSAGES, 1, false);
	}

	/** @return how the connection moves KV bytes (settled once it is open) */
	UcxDataPath dataPath() {
		return path;
	}

	@Override
	public boolean isActive() {
		State s = state;
		return s == State.OPEN || s == State.CONNECTING;
	}

	// ---- entry points from any thread

	@Override
	public void send(KVMessage message, SendGate gate, SendListener listener) {
		Objects.requireNonNull(message, "message");
		Objects.requireNonNull(gate, "gate");
		Objects.requireNonNull(listener, "listener");
		if (!isActive()) {
			listener.failed(closedError());
			return;
		}
		node.loop.execute(() -> whenReady(() -> writeMessage(message, gate, listener)));
	}

	@Override
	public void send(Block block, SendListener listener) {
		Objects.requireNonNull(block, "block");
		Objects.requireNonNull(listener, "listener");
		if (!isActive()) {
			listener.failed(closedError());
			return;
		}
		node.loop.execute(() -> whenReady(() -> {
			if (block instanceof ScatterBlock s) {
				writeScatter(s, listener);
			}
			else {
				writeBlock((DataBlock) block, listener);
			}
		}));
	}

	@Override
	public void close(String why) {
		Objects.requireNonNull(why, "why");
		node.loop.execute(() -> closeWith(new CloseReason(CloseReason.Kind.LOCAL, why), true));
	}

	@Override
	public Mono<Void> onClose() {
		return closed.asMono();
	}

	// ---- the loop's side

	/** Opens the connection once the handshake settled the peer: its endpoint, ids, keys and data path. */
	void open(Handshake peer, Handshake own, UcxDataPath chosen, boolean peerErrors, Registrations.Entry[] offered) {
		this.peerId = peer.connection();
		this.path = chosen;
		this.offered.addAll(List.of(offered));
		ByteBuffer address = ByteBuffer.allocateDirect(peer.workerAddress().length);
		address.put(peer.workerAddress()).flip();
		UcpEndpointParams params = new UcpEndpointParams().setUcpAddress(address).setName(id());
		if (peerErrors) {
			params.setPeerErrorHandlingMode().setErrorHandler((ep, status, message) -> node.loop.execute(
					() -> closeWith(new CloseReason(CloseReason.Kind.PEER_CLOSED, "UCX endpoint to " + remote
							+ " failed: " + message + " (status " + status + ")"), false)));
		}
		try {
			endpoint = node.loop.worker.newEndpoint(params);
		}
		catch (RuntimeException e) {
			throw new KVFerryException("UCX cannot reach " + remote + " with transports " + node.describeTls() + ": "
					+ e.getMessage(), e);
		}
		for (Handshake.Region r : peer.regions()) {
			unpack(r.base(), r.length(), r.key());
		}
		if (!accepted) {
			// Decode is ready: prefill sends nothing before this first message, so every key is unpacked by then.
			state = State.OPEN;
			sendControl(Wire.HEARTBEAT, 0, null);
			pumpSoon();
		}
		log.debug("UCX connection {} to {} open: {} ({})", id(), remote, chosen, own.tls());
	}

	/** The acceptor's handler, once prefill's engine has it. */
	void handler(ConnectionHandler handler) {
		this.handler = handler;
	}

	private void whenReady(Runnable send) {
		if (state == State.CONNECTING) {
			deferred.add(send);
		}
		else {
			send.run();
		}
	}

	private void writeMessage(KVMessage message, SendGate gate, SendListener listener) {
		if (state != State.OPEN) {
			listener.failed(closedError());
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

	private void writeBlock(DataBlock block, SendListener listener) {
		DataHeader h = block.header();
		if (state != State.OPEN) {
			listener.failed(closedError());
			return;
		}
		if (!block.gate().isOpen()) {
			listener.failed(new KVFerryException("the room of " + h + " stopped before it was written"));
			return;
		}
		boolean sourceContiguous = h.count() == 1 || block.srcStride() == h.chunkLen();
		if (path == UcxDataPath.ONE_SIDED) {
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
	 * Many small pieces of one room as one message: their sources to read (one-sided, when every piece lies in a
	 * registered region) or their bytes gathered after the piece table.
	 */
	private void writeScatter(ScatterBlock block, SendListener listener) {
		ScatterHeader h = block.header();
		if (state != State.OPEN) {
			listener.failed(closedError());
			return;
		}
		if (!block.gate().isOpen()) {
			listener.failed(new KVFerryException("the room of " + h + " stopped before it was written"));
			return;
		}
		int n = h.count();
		int[] regions = null;
		if (path == UcxDataPath.ONE_SIDED) {
			regions = new int[n];
			for (int i = 0; i < n && regions != null; i++) {
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
				writeBlock(block.piece(i), i == n - 1 ? listener : SendListener.NONE);
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
			long to = data.memoryAddress() + data.writerIndex();
			for (int i = 0; i < n; i++) {
				NativeMemory.copy(block.srcAddress(i), to, h.length(i));
				to += h.length(i);
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
		if (found < 0 || offered.size() >= MAX_REGIONS) {
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

	private void unpack(long base, long length, byte[] key) {
		if (peerRegions.size() >= MAX_REGIONS) {
			throw new ProtocolException("more than " + MAX_REGIONS + " registered regions announced");
		}
		ByteBuffer packed = ByteBuffer.allocateDirect(key.length);
		packed.put(key).flip();
		peerRegions.add(new Remote(base, length, endpoint().unpackRemoteKey(packed)));
	}

	private void track(long seq, SendListener listener) {
		if (listener != SendListener.NONE) {
			unacked.add(new Waiting(seq, listener));
		}
	}

	/** Writes what has no sequence number: acknowledgements, heartbeats, a close. */
	private void sendControl(int type, long seq, @Nullable String text) {
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
		UcpEndpoint ep = endpoint;
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
		ep.sendAmNonBlocking(Wire.AM_ID, header.memoryAddress(), header.readableBytes(), data, length, flags,
				new UcxCallback() {
					@Override
					public void onSuccess(UcpRequest request) {
						header.release();
						if (body != null) {
							body.release();
						}
					}

					@Override
					public void onError(int status, String message) {
						header.release();
						if (body != null) {
							body.release();
						}
						if (status != UcsConstants.STATUS.UCS_ERR_CANCELED) {
							closeWith(new CloseReason(CloseReason.Kind.IO, "UCX send of " + Wire.name(type) + " to "
									+ remote + " failed: " + message), false);
						}
					}
				});
	}

	/**
	 * An active message for this connection (on the loop, inside UCX's progress: nothing here calls UCX).
	 *
	 * @return {@link UcsConstants.STATUS#UCS_INPROGRESS} when {@code data} is kept (to be read or released later)
	 */
	int received(long seq, int type, ByteBuf header, UcpAmData data) {
		lastRead = System.nanoTime();
		State s = state;
		if (s == State.CLOSED || broken) {
			return UcsConstants.STATUS.UCS_OK;
		}
		try {
			if (type == Wire.ACK) {
				acknowledged(seq);
				return UcsConstants.STATUS.UCS_OK;
			}
			if (type == Wire.HEARTBEAT) {
				if (accepted && s == State.CONNECTING && !peerReady) {
					peerReady = true;
					ready();
				}
				return UcsConstants.STATUS.UCS_OK;
			}
			if (type == Wire.CLOSE) {
				String why = text(data);
				if (s == State.CLOSING) {
					peerAnswered = true;
					node.loop.execute(this::tryFinish);
				}
				else {
					inbound.close(why);
					pumpSoon();
				}
				return UcsConstants.STATUS.UCS_OK;
			}
			if (type == Wire.KEY) {
				int index = header.readInt();
				long base = header.readLong();
				long length = header.readLong();
				if (index != peerRegions.size() || base == 0 || length <= 0 || base + length < base
						|| !data.isDataValid() || data.getLength() > 1 << 16) {
					throw new ProtocolException("malformed key of region " + index + " (expected: region "
							+ peerRegions.size() + ", a region of at least one byte, a key of at most 64 KiB)");
				}
				byte[] key = new byte[(int) data.getLength()];
				NativeMemory.byteBuffer(data.getDataAddress(), key.length).get(key);
				unpack(base, length, key);
				return UcsConstants.STATUS.UCS_OK;
			}
			if (s != State.OPEN && !(s == State.CONNECTING && peerReady)) {
				return UcsConstants.STATUS.UCS_OK;
			}
			if (seq != expectedSeq) {
				throw new ProtocolException(Wire.name(type) + " numbered " + seq + " arrived out of order (expected: "
						+ expectedSeq + ")");
			}
			expectedSeq++;
			switch (type) {
				case Wire.MESSAGE -> {
					if (!data.isDataValid()) {
						throw new ProtocolException("a control message came by rendezvous (expected: eager)");
					}
					inbound.message(seq, RecordCodec.readMessage(NativeMemory.wrap(data.getDataAddress(),
							(int) data.getLength())));
				}
				case Wire.DATA -> {
					DataHeader h = RecordCodec.read(header, DataHeader.class);
					inbound.data(seq, h, segment(data));
					pumpSoon();
					return data.isDataValid() ? UcsConstants.STATUS.UCS_OK : UcsConstants.STATUS.UCS_INPROGRESS;
				}
				case Wire.MORE -> {
					inbound.more(seq, segment(data));
					pumpSoon();
					return data.isDataValid() ? UcsConstants.STATUS.UCS_OK : UcsConstants.STATUS.UCS_INPROGRESS;
				}
				case Wire.GET -> pull(seq, header);
				case Wire.SCATTER -> scatter(seq, header, data);
				default -> throw new ProtocolException("unknown active message " + type);
			}
			pumpSoon();
		}
		catch (ProtocolException | IllegalArgumentException | IndexOutOfBoundsException e) {
			String why = "malformed input from " + remote + ": " + e.getMessage();
			broken = true;
			log.warn("UCX connection {} closed: {}", id(), why);
			node.loop.execute(() -> closeWith(new CloseReason(CloseReason.Kind.PROTOCOL, why), true));
		}
		return UcsConstants.STATUS.UCS_OK;
	}

	/**
	 * An eager payload is copied out at once, so that UCX gets its receive buffer back whatever waits ahead of the
	 * block (holding thousands of them starves UCX's receive pool); a rendezvous stays a handle, received later
	 * straight into the block's landing zone.
	 */
	private Object segment(UcpAmData data) {
		if (!data.isDataValid()) {
			return data;
		}
		int n = (int) data.getLength();
		if (n < 1) {
			throw new ProtocolException("a block's active message carried no bytes");
		}
		ByteBuf copy = node.allocator.directBuffer(n, n);
		NativeMemory.copy(data.getDataAddress(), copy.memoryAddress(), n);
		return copy.writerIndex(n);
	}

	private void pull(long seq, ByteBuf header) {
		DataHeader h = RecordCodec.read(header, DataHeader.class);
		long source = header.readLong();
		long stride = header.readLong();
		int region = header.readInt();
		long span;
		try {
			span = h.count() == 1 || stride == h.chunkLen() ? Math.multiplyExact((long) h.chunkLen(), h.count())
					: Math.addExact(Math.multiplyExact(h.count() - 1L, stride), h.chunkLen());
		}
		catch (ArithmeticException e) {
			throw new ProtocolException("read of " + h + " spans more than 2^63 bytes");
		}
		if (stride < 0) {
			throw new ProtocolException("read of " + h + " with source stride " + stride);
		}
		Remote r = remoteFor(h, region, source, span);
		inbound.pull(seq, h, source, stride, r.key);
	}

	/** @return the peer's region a read names, once the read's source lies inside it */
	private Remote remoteFor(DataHeader h, int region, long source, long span) {
		if (region < 0 || region >= peerRegions.size()) {
			throw new ProtocolException("read of " + h + " names region " + region + " (expected: 0.."
					+ (peerRegions.size() - 1) + ")");
		}
		Remote r = peerRegions.get(region);
		if (source < r.base || span < 0 || source - r.base > r.length - span) {
			throw new ProtocolException("read of " + h + " at 0x" + Long.toHexString(source) + " leaves registered "
					+ "region " + region + " [0x" + Long.toHexString(r.base) + ", +" + r.length + ")");
		}
		return r;
	}

	/** Pieces of one room in one message: their bytes follow the table, or decode reads them. */
	private void scatter(long seq, ByteBuf header, UcpAmData data) {
		int mode = header.readUnsignedByte();
		long room = header.readLong();
		if (!data.isDataValid() || mode > 1) {
			throw new ProtocolException("pieces of room " + room + " came by rendezvous or in mode " + mode
					+ " (expected: eager, mode 0 or 1)");
		}
		ByteBuf in = NativeMemory.wrap(data.getDataAddress(), (int) data.getLength());
		try {
			if (in.readableBytes() < 5) {
				throw new ProtocolException("pieces of room " + room + ": truncated table");
			}
			RegionKind kind = RegionKind.fromOrdinal(in.readUnsignedByte());
			int n = in.readInt();
			if (n < 1 || n > ScatterHeader.MAX_PIECES || in.readableBytes() < 16L * n) {
				throw new ProtocolException("pieces of room " + room + ": " + n + " pieces with " + in.readableBytes()
						+ " bytes (expected: 1.." + ScatterHeader.MAX_PIECES + " pieces of 16 bytes each)");
			}
			int[] regions = new int[n];
			long[] offsets = new long[n];
			int[] lengths = new int[n];
			for (int i = 0; i < n; i++) {
				regions[i] = in.readInt();
				offsets[i] = in.readLong();
				lengths[i] = in.readInt();
			}
			ScatterHeader h = new ScatterHeader(room, kind, n, regions, offsets, lengths);
			if (mode == 0) {
				h.validate(in.readableBytes());
				ByteBuf payload = node.allocator.directBuffer(in.readableBytes(), in.readableBytes());
				payload.writeBytes(in);
				inbound.scatter(seq, h, payload);
				return;
			}
			h.validate(h.payloadLength());
			if (in.readableBytes() != 12L * n) {
				throw new ProtocolException("pieces of room " + room + ": " + in.readableBytes() + " bytes of sources "
						+ "(expected: " + 12L * n + ")");
			}
			for (int i = 0; i < n; i++) {
				int region = in.readInt();
				long source = in.readLong();
				Remote r = remoteFor(h.piece(i), region, source, h.length(i));
				inbound.pull(seq, h.piece(i), source, h.length(i), r.key);
			}
		}
		finally {
			in.release();
		}
	}

	private static String text(UcpAmData data) {
		if (!data.isDataValid() || data.getLength() > 4096) {
			return "";
		}
		byte[] b = new byte[(int) data.getLength()];
		NativeMemory.byteBuffer(data.getDataAddress(), b.length).get(b);
		return new String(b, StandardCharsets.UTF_8);
	}

	/**
	 * Decode's first message came: prefill's sends may go. After the sends handed over before (which still find the
	 * connection connecting and wait in turn), so that none overtakes another.
	 */
	private void ready() {
		node.loop.execute(() -> {
			if (state != State.CONNECTING) {
				return;
			}
			state = State.OPEN;
			List<Runnable> sends = new ArrayList<>(deferred);
			deferred.clear();
			sends.forEach(Runnable::run);
			pumpSoon();
		});
	}

	private void acknowledged(long seq) {
		Waiting w;
		while ((w = unacked.peek()) != null && w.seq <= seq) {
			unacked.poll();
			w.listener.written();
		}
	}

	/** Moves the inbound queue on soon, outside UCX's progress, and acknowledges what it finished. */
	void pumpSoon() {
		if (!pumpScheduled) {
			pumpScheduled = true;
			node.loop.execute(() -> {
				pumpScheduled = false;
				if (state != State.OPEN) {
					return;
				}
				inbound.pump();
				long finished = inbound.finishedSeq();
				if (finished > ackedSent && state == State.OPEN) {
					ackedSent = finished;
					sendControl(Wire.ACK, finished, null);
				}
			});
		}
	}

	/** Heartbeats and silence, every half interval. */
	void tick(long now, long intervalNanos) {
		if (state == State.CONNECTING && accepted && now - lastRead > node.settings.handshakeTimeout().toNanos()) {
			closeWith(new CloseReason(CloseReason.Kind.PROTOCOL, "decode " + remote + " did not complete the UCX "
					+ "handshake within " + node.settings.handshakeTimeout()), false);
			return;
		}
		if (state != State.OPEN) {
			return;
		}
		if (now - lastRead > 2 * intervalNanos) {
			log.debug("{} silent: sent up to {}, expected {}, unacked {}, inbound {}", id(), nextSeq, expectedSeq,
					unacked.size(), inbound);
			closeWith(new CloseReason(CloseReason.Kind.SILENT_PEER, "no heartbeat from " + remote + " for 2 "
					+ "intervals (" + node.settings.heartbeatInterval() + " each)"), false);
			return;
		}
		if (now - lastWrite >= intervalNanos) {
			sendControl(Wire.HEARTBEAT, 0, null);
		}
	}

	/** Engine calls, each a protocol failure when the engine refuses. */
	@Nullable PayloadSink onData(DataHeader h) {
		try {
			return handler().onData(this, h);
		}
		catch (ProtocolException e) {
			closeWith(new CloseReason(CloseReason.Kind.PROTOCOL, e.getMessage()), true);
			return null;
		}
	}

	void deliver(KVMessage message) {
		try {
			handler().onMessage(this, message);
		}
		catch (RuntimeException e) {
			log.warn("UCX connection {} closed: {}", id(), e.toString(), e);
			closeWith(new CloseReason(CloseReason.Kind.PROTOCOL, String.valueOf(e.getMessage())), true);
		}
	}

	/** A read failed: the connection cannot go on. */
	void failed(Throwable error) {
		closeWith(new CloseReason(CloseReason.Kind.IO, error.getMessage()), true);
	}

	void peerClosed(String why) {
		closeWith(new CloseReason(CloseReason.Kind.PEER_CLOSED, "connection closed by peer " + remote
				+ (why.isEmpty() ? "" : ": " + why)), false);
	}

	/** Counts payload bytes that landed, by the path they took. */
	void counted(boolean read, long bytes) {
		if (read) {
			node.bytesRead.add(bytes);
			node.reads.increment();
		}
		else {
			node.bytesInMessages.add(bytes);
			node.messages.increment();
		}
	}

	/** A read that was in flight at the close completed. */
	void settled() {
		tryFinish();
	}

	ByteBufAllocator allocator() {
		return node.allocator;
	}

	UcpEndpoint endpoint() {
		return Objects.requireNonNull(endpoint, "endpoint");
	}

	private ConnectionHandler handler() {
		return Objects.requireNonNull(handler, "handler");
	}

	/**
	 * Closes: nothing more is sent or delivered, listeners still waiting fail, and the peer is told (when
	 * {@code ask}, this side waits for its answer, at most the handshake timeout). The handler hears of it once every
	 * read in flight completed and the peer answered.
	 */
	void closeWith(CloseReason why, boolean ask) {
		if (state == State.CLOSING || state == State.CLOSED) {
			return;
		}
		boolean wasOpen = state == State.OPEN;
		state = State.CLOSING;
		reason = why;
		inbound.stop();
		Waiting w;
		KVFerryException error = closedError();
		while ((w = unacked.poll()) != null) {
			w.listener.failed(error);
		}
		for (Runnable r : deferred) {
			r.run();
		}
		deferred.clear();
		if (ask && endpoint != null && (wasOpen || accepted)) {
			closeSent = true;
			sendControl(Wire.CLOSE, 0, why.message());
			node.after(node.settings.handshakeTimeout(), () -> {
				lingerOver = true;
				tryFinish();
			});
		}
		else {
			lingerOver = true;
		}
		tryFinish();
	}

	private void tryFinish() {
		if (state != State.CLOSING || inbound.inFlight() > 0 || !(lingerOver || peerAnswered)) {
			return;
		}
		state = State.CLOSED;
		UcpEndpoint ep = endpoint;
		if (ep != null) {
			if (!closeSent && reason != null && reason.kind() == CloseReason.Kind.PEER_CLOSED) {
				// The answer to the peer's close: this side reads nothing of its memory any more.
				sendControl(Wire.CLOSE, 0, "");
			}
			try {
				node.closing(ep.closeNonBlockingFlush());
			}
			catch (RuntimeException e) {
				log.debug("closing UCX endpoint of {}: {}", id(), e.toString());
			}
			endpoint = null;
		}
		for (Remote r : peerRegions) {
			r.key.close();
		}
		peerRegions.clear();
		node.removed(this);
		CloseReason r = Objects.requireNonNull(reason);
		ConnectionHandler h = handler;
		try {
			if (h != null) {
				h.onClose(this, r);
			}
		}
		finally {
			closed.tryEmitEmpty();
		}
	}

	private KVFerryException closedError() {
		CloseReason r = reason;
		return new KVFerryException("connection " + id() + " to " + remote + " is closed"
				+ (r == null ? "" : ": " + r.message()));
	}

	@Override
	public String toString() {
		return id();
	}
}
