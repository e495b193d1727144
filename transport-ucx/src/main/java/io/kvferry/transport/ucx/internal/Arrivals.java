package io.kvferry.transport.ucx.internal;

import java.nio.charset.StandardCharsets;

import io.kvferry.ProtocolException;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.NativeMemory;
import io.netty.buffer.ByteBuf;
import org.openucx.jucx.ucp.UcpAmData;
import org.openucx.jucx.ucs.UcsConstants;

/**
 * The active messages that arrive for one connection, acted on by type inside UCX's progress on the node's loop:
 * acknowledgements (to {@link Outbound}), heartbeats, a close and announced keys at once, and the numbered items only
 * in the order sent, handed to the {@link Inbound} queue or, for reads, to the {@link PeerRegions} that check them.
 * Malformed input closes the connection, and nothing more is read while that close is on its way.
 */
final class Arrivals {

	private final UcxConnection connection;
	private final UcxNode node;
	private final Inbound inbound;
	private final PeerRegions regions;
	private final Outbound outbound;
	private final boolean accepted;
	private long expectedSeq = 1;
	private long lastRead = System.nanoTime();
	// Prefill: decode's first message came, so what it sends from now on is read (prefill's own sends wait for the
	// task that opens the connection).
	private boolean peerReady;
	// Malformed input was seen: nothing more is read while the close is on its way.
	private boolean broken;

	Arrivals(UcxConnection connection, UcxNode node, Inbound inbound, PeerRegions regions, Outbound outbound,
			boolean accepted) {
		this.connection = connection;
		this.node = node;
		this.inbound = inbound;
		this.regions = regions;
		this.outbound = outbound;
		this.accepted = accepted;
	}

	/** @return when the last active message arrived, on {@link System#nanoTime} */
	long lastRead() {
		return lastRead;
	}

	/** @return the number the next numbered item must carry */
	long expectedSeq() {
		return expectedSeq;
	}

	/**
	 * An active message for this connection (on the loop, inside UCX's progress: nothing here calls UCX).
	 *
	 * @return {@link UcsConstants.STATUS#UCS_INPROGRESS} when {@code data} is kept (to be read or released later)
	 */
	int received(long seq, int type, ByteBuf header, UcpAmData data) {
		lastRead = System.nanoTime();
		UcxConnection.State s = connection.state();
		if (s == UcxConnection.State.CLOSED || broken) {
			return UcsConstants.STATUS.UCS_OK;
		}
		try {
			if (type == Wire.ACK) {
				outbound.acknowledged(seq);
				return UcsConstants.STATUS.UCS_OK;
			}
			if (type == Wire.HEARTBEAT) {
				if (accepted && s == UcxConnection.State.CONNECTING && !peerReady) {
					peerReady = true;
					connection.ready();
				}
				return UcsConstants.STATUS.UCS_OK;
			}
			if (type == Wire.CLOSE) {
				String why = text(data);
				if (s == UcxConnection.State.CLOSING) {
					connection.peerAnswered();
				}
				else {
					connection.peerAsked();
					inbound.close(why);
					connection.pumpSoon();
				}
				return UcsConstants.STATUS.UCS_OK;
			}
			if (type == Wire.KEY) {
				regions.key(header, data);
				return UcsConstants.STATUS.UCS_OK;
			}
			if (s != UcxConnection.State.OPEN && !(s == UcxConnection.State.CONNECTING && peerReady)) {
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
					connection.pumpSoon();
					return data.isDataValid() ? UcsConstants.STATUS.UCS_OK : UcsConstants.STATUS.UCS_INPROGRESS;
				}
				case Wire.MORE -> {
					inbound.more(seq, segment(data));
					connection.pumpSoon();
					return data.isDataValid() ? UcsConstants.STATUS.UCS_OK : UcsConstants.STATUS.UCS_INPROGRESS;
				}
				case Wire.GET -> regions.pull(seq, header);
				case Wire.SCATTER -> regions.scatter(seq, header, data);
				default -> throw new ProtocolException("unknown active message " + type);
			}
			connection.pumpSoon();
		}
		catch (ProtocolException | IllegalArgumentException | IndexOutOfBoundsException e) {
			String why = "malformed input from " + connection.remoteAddress() + ": " + e.getMessage();
			broken = true;
			connection.malformed(why);
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

	private static String text(UcpAmData data) {
		if (!data.isDataValid() || data.getLength() > 4096) {
			return "";
		}
		byte[] b = new byte[(int) data.getLength()];
		NativeMemory.byteBuffer(data.getDataAddress(), b.length).get(b);
		return new String(b, StandardCharsets.UTF_8);
	}
}
