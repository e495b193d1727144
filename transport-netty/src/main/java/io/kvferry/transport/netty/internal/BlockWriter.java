package io.kvferry.transport.netty.internal;

import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

import io.kvferry.KVFerryException;
import io.kvferry.ProtocolException;
import io.kvferry.spi.Block;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.ScatterBlock;
import io.kvferry.spi.SendGate;
import io.kvferry.spi.SendListener;
import io.kvferry.transport.netty.internal.shm.RingSender;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The block an {@link OutboundQueue} is writing, frame by frame: a data block cut by {@link DataFrameCursor}, or a
 * scatter block cut by {@link ScatterCursor} (a piece of which may go alone as a data block meanwhile). Before each
 * frame the block's {@link SendGate} is asked, so an aborted room stops mid-block; the block's listener hears once its
 * last frame was written, or that it was dropped.
 *
 * <p>Confined to the connection's event loop. Owns nothing it must release: blocks reference engine memory that
 * outlives them, and frames are handed to Netty as they are written.
 */
final class BlockWriter {

	private static final Logger log = LoggerFactory.getLogger(BlockWriter.class);

	// Payload bytes queued but not handed to Netty, shared with the queue that counts them in.
	private final AtomicLong queuedBytes;
	// Closes the connection at once, with the reason: the peer broke the same-host ring.
	private final Consumer<KVFerryException> failNow;
	private String prefix;
	// Written on the event loop, read by the connection's stats on any thread.
	private volatile long blocksDropped;

	private DataFrameCursor current;
	// Told when the current block was written or dropped.
	private SendListener currentListener = SendListener.NONE;
	// A scatter block being written; a piece of it that goes alone is in current meanwhile.
	private ScatterCursor scatter;
	// Told when the scatter block was written or dropped.
	private SendListener scatterListener = SendListener.NONE;
	// Same host: blocks started from now on go through this ring's slots; null for TCP.
	private RingSender ring;
	private boolean viaRing;

	/**
	 * @param queuedBytes the queue's count of payload bytes not yet handed to Netty: written and dropped bytes leave it
	 * @param failNow closes the connection at once with the reason (the peer broke the same-host ring, or a frame
	 *        could not be built whole)
	 * @param prefix the connection's log prefix
	 */
	BlockWriter(AtomicLong queuedBytes, Consumer<KVFerryException> failNow, String prefix) {
		this.queuedBytes = queuedBytes;
		this.failNow = failNow;
		this.prefix = prefix;
	}

	/** The connection's log prefix, once it is known. */
	void prefix(String logPrefix) {
		this.prefix = logPrefix;
	}

	/** From now on blocks go through {@code sender}'s ring (same host). */
	void sameHost(RingSender sender) {
		this.ring = sender;
	}

	/** @return whether a block is being written */
	boolean busy() {
		return current != null || scatter != null;
	}

	/** @return whether the next frame waits for a free slot of the same-host ring */
	boolean waitsForRing() {
		return current != null && viaRing && !ring.hasFreeSlot();
	}

	/** @return blocks dropped because their gate closed */
	long blocksDropped() {
		return blocksDropped;
	}

	/**
	 * Starts writing a queued block; only when not {@link #busy()}.
	 *
	 * @param item a {@link DataBlock}, a {@link ScatterBlock}, or either {@link Listened}
	 * @param maxFrameLength the peer's frame limit
	 */
	void start(Object item, int maxFrameLength) {
		SendListener listener = item instanceof Listened l ? l.listener() : SendListener.NONE;
		Block block = item instanceof Listened l ? l.block() : (Block) item;
		viaRing = ring != null;
		int frameLength = viaRing ? Math.min(maxFrameLength, ring.slotSize()) : maxFrameLength;
		if (block instanceof DataBlock b) {
			current = new DataFrameCursor(b, frameLength);
			currentListener = listener;
		}
		else {
			// A same-host ring's slots carry one-piece frames: there each piece goes as its own block.
			scatter = new ScatterCursor((ScatterBlock) block, frameLength, viaRing);
			scatterListener = listener;
		}
	}

	/**
	 * Writes the next frame of the block being written; only when {@link #busy()}.
	 *
	 * @return the payload bytes written, or -1 when no frame was written (the block was dropped, or a scatter block's
	 *         piece was set up to go alone)
	 */
	long writeNext(ChannelHandlerContext ctx, int maxFrameLength) {
		boolean data = current != null;
		if (!isOpen(data ? current.block().gate() : scatter.block().gate())) {
			blocksDropped++;
			if (data) {
				dropCurrent(false);
			}
			else {
				dropScatter(false);
			}
			return -1;
		}
		return data ? writeDataFrame(ctx) : writeScatterFrame(ctx, maxFrameLength);
	}

	private long writeDataFrame(ChannelHandlerContext ctx) {
		DataFrameCursor cursor = current;
		DataHeader frame = cursor.next();
		SendListener done = null;
		if (!cursor.hasNext()) {
			current = null;
			done = currentListener;
			currentListener = SendListener.NONE;
		}
		if (viaRing) {
			ByteBuf slotFrame;
			try {
				slotFrame = ring.write(ctx.alloc(), frame, cursor);
			}
			catch (ProtocolException e) {
				// The ring cannot carry anything any more, so no room of this connection can finish: close now.
				return abandon(frame, done, e);
			}
			// Flushed at once: decode copies this slot out while the next one is filled.
			ctx.writeAndFlush(slotFrame, ctx.voidPromise());
		}
		else {
			// The payload before the header: a header on the wire without its payload would make the peer read the
			// next frame's bytes as this one's.
			ByteBuf payload;
			try {
				payload = cursor.payload(ctx.alloc());
			}
			catch (RuntimeException | OutOfMemoryError e) {
				return abandon(frame, done, new KVFerryException("could not gather the " + frame.payloadLength()
						+ " bytes of a data frame of room " + frame.room() + ": " + e, e));
			}
			ByteBuf header;
			try {
				header = KVFrameCodec.encodeDataHeader(ctx.alloc(), frame);
			}
			catch (RuntimeException | OutOfMemoryError e) {
				if (payload != null) {
					payload.release();
				}
				return abandon(frame, done, new KVFerryException("could not encode a data frame's header of room "
						+ frame.room() + ": " + e, e));
			}
			ctx.write(header, ctx.voidPromise());
			if (payload != null) {
				ctx.write(payload, ctx.voidPromise());
			}
		}
		queuedBytes.addAndGet(-frame.payloadLength());
		if (done != null) {
			tell(done, null, prefix);
		}
		return frame.payloadLength();
	}

	/**
	 * Gives up on a data frame that cannot be written whole, and with it on the connection: the block's remaining
	 * frames are dropped and its listener told, so that no room waits for bytes that will never come.
	 *
	 * @return -1: no frame written
	 */
	private long abandon(DataHeader frame, SendListener done, KVFerryException e) {
		queuedBytes.addAndGet(-frame.payloadLength());
		if (current != null) {
			dropCurrent(true);
		}
		else if (done != null) {
			tell(done, e, prefix);
		}
		failNow.accept(e);
		return -1;
	}

	/** Writes the scatter block's next frame, or hands its next piece to a data-frame cursor when it goes alone. */
	private long writeScatterFrame(ChannelHandlerContext ctx, int maxFrameLength) {
		ScatterCursor cursor = scatter;
		DataBlock single = cursor.takeSingle();
		long written = -1;
		if (single == null) {
			int parts = cursor.nextFrame(ctx.alloc());
			for (int i = 0; i < parts; i++) {
				ctx.write(cursor.part(i), ctx.voidPromise());
			}
			written = cursor.framePayload();
			queuedBytes.addAndGet(-written);
		}
		else {
			// Its bytes stay counted as queued until that cursor writes them.
			current = new DataFrameCursor(single, viaRing ? Math.min(maxFrameLength, ring.slotSize())
					: maxFrameLength);
		}
		if (!cursor.hasNext()) {
			scatter = null;
			SendListener done = scatterListener;
			scatterListener = SendListener.NONE;
			if (single == null) {
				tell(done, null, prefix);
			}
			else {
				// The last piece goes alone: the block is written once it is.
				currentListener = done;
			}
		}
		return written;
	}

	/**
	 * Drops the block being written, and the scatter block a piece of it came from.
	 *
	 * @param closing whether the connection is closing (else the block's room stopped)
	 */
	void drop(boolean closing) {
		if (current != null) {
			dropCurrent(closing);
		}
		if (scatter != null) {
			dropScatter(closing);
		}
	}

	private void dropCurrent(boolean closing) {
		long room = current.block().header().room();
		queuedBytes.addAndGet(-current.remainingBytes());
		current = null;
		SendListener listener = currentListener;
		currentListener = SendListener.NONE;
		dropped(listener, "a block of room " + room, closing);
	}

	private void dropScatter(boolean closing) {
		long room = scatter.block().header().room();
		queuedBytes.addAndGet(-scatter.remainingBytes());
		scatter = null;
		SendListener listener = scatterListener;
		scatterListener = SendListener.NONE;
		dropped(listener, "a scatter block of room " + room, closing);
	}

	private void dropped(SendListener listener, String what, boolean closing) {
		if (listener != SendListener.NONE) {
			tell(listener, new KVFerryException(what + " was dropped: "
					+ (closing ? "the connection closed" : "its room stopped")), prefix);
		}
	}

	private boolean isOpen(SendGate gate) {
		return isOpen(gate, prefix);
	}

	/** @return whether {@code gate} is open; a gate that throws is logged and counts as closed */
	static boolean isOpen(SendGate gate, String prefix) {
		try {
			return gate.isOpen();
		}
		catch (RuntimeException e) {
			log.error("{} a send gate failed; dropping what it guards", prefix, e);
			return false;
		}
	}

	/**
	 * Tells a block's listener what became of it: written when {@code failure} is null. A listener that throws is
	 * logged: it must not stop the queue.
	 */
	static void tell(SendListener listener, Throwable failure, String prefix) {
		try {
			if (failure == null) {
				listener.written();
			}
			else {
				listener.failed(failure);
			}
		}
		catch (RuntimeException e) {
			log.error("{} a data block's send listener failed", prefix, e);
		}
	}

	/** @return the payload bytes of a queued {@link DataBlock}, {@link ScatterBlock} or {@link Listened} either */
	static long payloadLength(Object item) {
		return item instanceof Listened l ? l.block().payloadLength() : ((Block) item).payloadLength();
	}

	/** A queued data or scatter block whose sender wants to hear when it was written or dropped. */
	record Listened(Block block, SendListener listener) {
	}
}
