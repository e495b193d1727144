package io.kvferry.transport.netty.internal;

import java.time.Duration;
import java.util.Queue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiFunction;
import java.util.function.Consumer;

import io.kvferry.KVFerryException;
import io.kvferry.ProtocolException;
import io.kvferry.RoomPriority;
import io.kvferry.spi.Block;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.SendGate;
import io.kvferry.spi.SendListener;
import io.kvferry.transport.netty.internal.shm.RingSender;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.channel.socket.DuplexChannel;
import io.netty.handler.ssl.SslHandler;
import io.netty.util.internal.PlatformDependent;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The outbound side of one connection: a FIFO multi-producer queue of control messages and data blocks, drained on
 * the channel's event loop only while the channel is writable.
 *
 * <p>Items of a {@link RoomPriority#HIGH} room (its gate says so) go in a queue of their own, taken before the other;
 * each queue keeps its order, so a room's Success never overtakes its data.
 *
 * <p>Any thread may offer; one drain pass at a time runs on the event loop, writes queued items until the channel's
 * write buffer reaches the high watermark, and flushes once. A slow peer therefore holds back queued items (small
 * descriptors), never unbounded buffers. {@link BlockWriter} cuts data and scatter blocks into frames of at most the
 * peer's frame limit, one block at a time; writability and the block's {@link SendGate} are checked before each
 * frame, so an aborted room stops mid-block. A block queued with a listener
 * tells it once its last frame was written (or that it was dropped), on the event loop: a sender keeps only a window of
 * each room queued, so rooms sharing the connection take turns.
 *
 * <p>Closing is ordered: control messages queued before the close are still written, queued data blocks are dropped,
 * and so are messages behind a room's gate (a Success that reports the room's data), since their data may have been
 * among the dropped blocks. The channel closes after the flush, or after a grace period if the peer does not take the
 * bytes; when this side writes a same-host ring, it shuts its output down after the flush instead and closes once the
 * peer closed (or after the grace period), so that the peer's credits in flight never reset the connection. Once the
 * channel is closed, what is still queued is failed (messages) or forgotten (blocks). A same-host ring its peer broke
 * (shrank its file) closes the channel at once instead: no room of the connection could finish.
 *
 * <p>Owns nothing it must release: data blocks reference engine memory that outlives them, and frames are handed to
 * Netty as they are written.
 */
final class OutboundQueue {

	private static final Logger log = LoggerFactory.getLogger(OutboundQueue.class);

	private static final Object CLOSE = new Object();

	private final Channel channel;
	private final Duration closeGrace;
	// Builds the error a message fails with when the connection closed before it went out: "closed <when>: <reason>".
	private final BiFunction<String, Throwable, KVFerryException> closedError;
	private final Queue<Object> queue = PlatformDependent.newMpscQueue();
	// What HIGH-priority rooms queue: taken before anything of the queue above, in its own order. The block in hand
	// is finished first, so a HIGH room waits for at most one block on this connection.
	private final Queue<Object> urgent = PlatformDependent.newMpscQueue();
	private final AtomicBoolean drainScheduled = new AtomicBoolean();
	private final AtomicLong queuedBytes = new AtomicLong();
	// close() was called: nothing new is queued, queued data is dropped, queued messages still go out.
	private final AtomicBoolean closing = new AtomicBoolean();
	private final Runnable drainTask = this::runDrain;
	private final Runnable resumeTask = this::resumeAfterPoll;

	// Data bytes a loop writes before it looks at its sockets again. Written frames free room in the write buffer, the
	// peer's reads free room in the socket, and both resume the drain at once: with a fast reader the loop would write
	// a whole large room without ever reading, and a small room's request (or an abort) would wait for all of it.
	static final long BYTES_BETWEEN_POLLS = 4L * 1024 * 1024;

	private volatile int maxFrameLength;
	// The channel closed; written on the event loop, read by offers on any thread.
	private volatile boolean closed;
	private volatile String prefix;

	// Event-loop confined.
	private ChannelHandlerContext ctx;
	private final BlockWriter blocks;
	// Something was written since the heartbeat tick last looked.
	private boolean written;
	// Data bytes written since the loop last polled its sockets (event-loop confined), and whether a drain waits for
	// that poll.
	private long sincePoll;
	private boolean resumePending;

	/**
	 * @param channel the connection's channel
	 * @param maxFrameLength payload bytes per data frame until the peer says otherwise
	 * @param closeGrace how long a close waits for the peer to take the last bytes
	 * @param closedError the error of a message the connection could not write, given when and the Netty cause
	 * @param failNow closes the connection at once with the reason (the peer broke the same-host ring)
	 */
	OutboundQueue(Channel channel, int maxFrameLength, Duration closeGrace,
			BiFunction<String, Throwable, KVFerryException> closedError, Consumer<ProtocolException> failNow) {
		this.channel = channel;
		this.maxFrameLength = maxFrameLength;
		this.closeGrace = closeGrace;
		this.closedError = closedError;
		this.prefix = "[" + channel.id().asShortText() + "]";
		this.blocks = new BlockWriter(queuedBytes, failNow, prefix);
	}

	/** Starts writing: items offered before the channel was in a pipeline wait for this. On the event loop. */
	void start(ChannelHandlerContext ctx, String logPrefix) {
		this.ctx = ctx;
		this.prefix = logPrefix;
		blocks.prefix(logPrefix);
		drain();
	}

	/** From now on data frames go through {@code sender}'s ring (same host). On the event loop. */
	void sameHost(RingSender sender) {
		blocks.sameHost(sender);
		drain();
	}

	/** The peer's frame limit, learnt in the handshake: frames written from now on are cut to it. */
	void maxFrameLength(int length) {
		this.maxFrameLength = length;
	}

	/** @return whether {@link #close} was called or the channel closed */
	boolean isClosing() {
		return closing.get() || closed;
	}

	/**
	 * Queues a control message; {@code promise} completes when it was written, or fails when it was not.
	 */
	void offer(KVMessage message, SendGate gate, ChannelPromise promise) {
		if (isClosing()) {
			promise.setFailure(closedError.apply("before the message was queued", null));
			return;
		}
		queueFor(gate).offer(new Outbound(message, gate, promise));
		if (!scheduleDrain()) {
			promise.tryFailure(closedError.apply("before the message was written", null));
		}
	}

	/**
	 * Queues a data or scatter block; dropped (and logged at debug) once the connection is closing.
	 *
	 * @param listener told once the block's last frame was written, or that it was dropped
	 */
	void offer(Block block, SendListener listener) {
		if (isClosing()) {
			log.debug("{} dropping {}: connection closing", prefix, block instanceof DataBlock d ? d.header() : block);
			tell(listener, closedError.apply("before the block was queued", null));
			return;
		}
		queuedBytes.addAndGet(block.payloadLength());
		queueFor(block.gate()).offer(listener == SendListener.NONE ? block : new BlockWriter.Listened(block, listener));
		if (!scheduleDrain()) {
			tell(listener, closedError.apply("before the block was written", null));
		}
	}

	private Queue<Object> queueFor(SendGate gate) {
		return gate.priority() == RoomPriority.HIGH ? urgent : queue;
	}

	/**
	 * Closes in order: what was queued before is handled as described on the class, then the channel closes.
	 *
	 * @return false when it was closing already
	 */
	boolean close() {
		if (!closing.compareAndSet(false, true)) {
			return false;
		}
		queue.offer(CLOSE);
		if (!scheduleDrain()) {
			channel.close();
		}
		return true;
	}

	/** The channel became writable again: resume. */
	void writable() {
		scheduleDrain();
	}

	/** The channel closed: fail what is left. On the event loop. */
	void closed() {
		closed = true;
		failQueued();
	}

	/** @return whether anything was written since the last call; clears it. On the event loop. */
	boolean takeWritten() {
		boolean w = written;
		written = false;
		return w;
	}

	/** Counts a write made outside the queue (a heartbeat) for {@link #takeWritten()}. On the event loop. */
	void written() {
		written = true;
	}

	/** @return payload bytes of data blocks queued but not yet handed to Netty */
	long queuedBytes() {
		return queuedBytes.get();
	}

	/** @return data blocks dropped because their gate closed */
	long blocksDropped() {
		return blocks.blocksDropped();
	}

	/** @return false when the event loop refused the task (the transport is shutting down) */
	private boolean scheduleDrain() {
		if (drainScheduled.compareAndSet(false, true)) {
			try {
				channel.eventLoop().execute(drainTask);
			}
			catch (RejectedExecutionException e) {
				drainScheduled.set(false);
				return false;
			}
		}
		return true;
	}

	private void runDrain() {
		drainScheduled.set(false);
		drain();
	}

	/**
	 * Drains again once the loop polled its sockets: a task scheduled with no delay runs after the next poll, where a
	 * task queued with {@code execute} may run before it, behind the write path's own tasks.
	 */
	private void resumeAfterNextPoll() {
		if (resumePending) {
			return;
		}
		resumePending = true;
		try {
			ctx.executor().schedule(resumeTask, 0, TimeUnit.NANOSECONDS);
		}
		catch (RejectedExecutionException e) {
			// The loop is shutting down: the close fails what is queued.
			resumePending = false;
		}
	}

	private void resumeAfterPoll() {
		resumePending = false;
		sincePoll = 0;
		drain();
	}

	private void drain() {
		if (ctx == null) {
			// Not started yet: start() drains.
			return;
		}
		if (closed) {
			failQueued();
			return;
		}
		boolean wrote = false;
		try {
			for (;;) {
				if (blocks.busy()) {
					if (closing.get()) {
						blocks.drop(true);
						continue;
					}
					if (!channel.isWritable() || blocks.waitsForRing()) {
						return;
					}
					if (sincePoll >= BYTES_BETWEEN_POLLS) {
						resumeAfterNextPoll();
						return;
					}
					long bytes = blocks.writeNext(ctx, maxFrameLength);
					if (bytes >= 0) {
						wrote = true;
						sincePoll += bytes;
					}
					if (!channel.isOpen()) {
						return;
					}
					continue;
				}
				if (!closing.get() && !channel.isWritable()) {
					return;
				}
				Object item = urgent.poll();
				if (item == null && (item = queue.poll()) == null) {
					return;
				}
				if (item instanceof Outbound m) {
					wrote |= writeMessage(m);
				}
				else if (item == CLOSE) {
					wrote = false;
					closeAfterFlush();
					return;
				}
				else if (closing.get()) {
					queuedBytes.addAndGet(-BlockWriter.payloadLength(item));
					if (item instanceof BlockWriter.Listened l) {
						tell(l.listener(), closedError.apply("before the block was written", null));
					}
				}
				else {
					blocks.start(item, maxFrameLength);
				}
			}
		}
		finally {
			if (wrote) {
				written = true;
				ctx.flush();
			}
		}
	}

	private boolean writeMessage(Outbound m) {
		boolean gated = m.gate != SendGate.OPEN;
		if (gated && closing.get()) {
			// Closing drops the data still queued, so a message that reports a room's data complete goes with it.
			m.promise.tryFailure(closedError.apply("before " + m.message + " was written (the room's queued data was "
					+ "dropped with the close)", null));
			return false;
		}
		if (gated && !BlockWriter.isOpen(m.gate, prefix)) {
			// A Success must not outrun the data it reports: they were dropped, so it is too.
			m.promise.tryFailure(new KVFerryException("the room of " + m.message + " stopped before it was written"));
			return false;
		}
		ByteBuf frame;
		try {
			frame = KVFrameCodec.encode(ctx.alloc(), m.message, maxFrameLength);
		}
		catch (RuntimeException e) {
			m.promise.tryFailure(e);
			return false;
		}
		ctx.write(frame, m.promise);
		return true;
	}

	private void tell(SendListener listener, Throwable failure) {
		BlockWriter.tell(listener, failure, prefix);
	}

	private void closeAfterFlush() {
		ChannelFuture flushed = ctx.writeAndFlush(Unpooled.EMPTY_BUFFER);
		if (channel instanceof DuplexChannel duplex && channel.pipeline().get(SslHandler.class) == null) {
			// The peer may have bytes on their way here (heartbeats, requests, a same-host ring's credits). Closing
			// with bytes unread resets the connection, and a reset makes the peer's kernel drop what it had not read
			// yet: the last frames, a Draining notice among them. Half-close instead: the peer reads up to the end of
			// the stream, then closes, and this side closes when it reads that (or after the grace period). TLS
			// closes with its own close_notify, as before.
			flushed.addListener(f -> {
				if (f.isSuccess()) {
					duplex.shutdownOutput();
				}
				else {
					channel.close();
				}
			});
			ctx.executor().schedule(() -> {
				channel.close();
			}, closeGrace.toNanos(), TimeUnit.NANOSECONDS);
			return;
		}
		flushed.addListener(ChannelFutureListener.CLOSE);
		if (!flushed.isDone()) {
			// The peer does not take the bytes: give it the grace period, then close anyway.
			ctx.executor().schedule(() -> {
				channel.close();
			}, closeGrace.toNanos(), TimeUnit.NANOSECONDS);
		}
	}

	private void failQueued() {
		blocks.drop(true);
		Object item;
		while ((item = urgent.poll()) != null || (item = queue.poll()) != null) {
			if (item instanceof Outbound m) {
				m.promise.tryFailure(closedError.apply("before the message was written", null));
			}
			else if (item != CLOSE) {
				queuedBytes.addAndGet(-BlockWriter.payloadLength(item));
				if (item instanceof BlockWriter.Listened l) {
					tell(l.listener(), closedError.apply("before the block was written", null));
				}
			}
		}
	}

	/** A queued control message, the gate it is written behind, and the promise its listener observes. */
	private record Outbound(KVMessage message, SendGate gate, ChannelPromise promise) {
	}
}
