package io.kvferry.transport.netty.internal;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import io.netty.channel.ChannelHandlerContext;
import io.netty.util.concurrent.ScheduledFuture;

/**
 * The heartbeats of one connection: writes one whenever a whole interval passed without a write, and counts the
 * peer's. Ticks every half interval, and a tick that finds no write since the one before sends one (and counts it as
 * a write), so the peer, which judges this side by the interval its {@code AUTH} announced, never goes two of them
 * (its dead-peer timeout) without a frame from here. Noticing the peer's silence is the idle handler's part.
 */
final class Heartbeats {

	private final OutboundQueue outbound;
	private final Duration interval;
	// Set on the event loop when the channel went inactive; the tick may still fire once before it is cancelled.
	private volatile boolean stopped;
	// Written on the event loop only; read by diagnostics on any thread.
	private volatile long received;

	Heartbeats(OutboundQueue outbound, Duration interval) {
		this.outbound = outbound;
		this.interval = interval;
	}

	/** Starts ticking, right after this side's preface went out; the tick ends with the channel. On the loop. */
	void start(ChannelHandlerContext ctx) {
		long half = Math.max(1, interval.toNanos() / 2);
		// The preface just went out.
		outbound.written();
		ScheduledFuture<?> tick = ctx.executor().scheduleAtFixedRate(() -> {
			if (!stopped && !outbound.takeWritten()) {
				ctx.writeAndFlush(KVFrameCodec.encodeHeartbeat(ctx.alloc()));
				outbound.written();
			}
		}, half, half, TimeUnit.NANOSECONDS);
		ctx.channel().closeFuture().addListener(f -> tick.cancel(false));
	}

	/** Writes no more heartbeats: the channel is inactive. On the loop. */
	void stop() {
		stopped = true;
	}

	/** Counts one heartbeat from the peer. On the loop. */
	void received() {
		received++;
	}

	/** @return heartbeats received so far */
	long receivedCount() {
		return received;
	}
}
