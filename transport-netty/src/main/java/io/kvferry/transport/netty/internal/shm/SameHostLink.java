package io.kvferry.transport.netty.internal.shm;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Supplier;

import io.kvferry.ProtocolException;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.NativeMemory;
import io.kvferry.spi.PayloadSink;
import io.kvferry.transport.netty.SameHost;
import io.kvferry.transport.netty.internal.KVFrameCodec;
import io.kvferry.transport.netty.internal.TransportSettings;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.util.concurrent.ScheduledFuture;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * The same-host path of one connection: KV payloads through a shared staging {@link Ring} instead of the socket, the
 * frame protocol otherwise unchanged.
 *
 * <p><b>Setup.</b> Right after the kvferry handshake, the connecting side (decode) creates a ring file and sends
 * {@code SHM_OFFER} with its host identity (the kernel's boot id), the file's path, a nonce and the ring's shape; its
 * {@code connect} completes only when the answer came (or did not in time), so the first room already uses the ring.
 * The accepting side (prefill) refuses at once when its identity differs, otherwise maps the file and checks that its
 * header carries the nonce (the probe: same host, same shared-memory directory), unlinks the file (both sides have
 * it mapped now, and the mappings keep the memory), answers {@code SHM_REPLY} and routes its data through the ring.
 * Decode unlinks it too when the answer comes, or when none came in time, so that the name never outlives the offer;
 * the mappings live until the connection ends. Any failure falls back to TCP with the reason (logged once per
 * transport at INFO, then at DEBUG). Files are created, mapped and unlinked off the event loop.
 *
 * <p><b>Data.</b> Prefill copies a frame's payload from registered memory into a free slot and writes a
 * {@code DATA_SHM} frame (the usual header and the slot index) in stream order. Decode checks the slot index and that
 * the payload fits a slot ({@link ProtocolException} otherwise, before anything is written), asks the engine for the
 * header's sink exactly as for a TCP frame (so the same write check, room liveness and abort fencing apply, and the
 * same byte count reaches Success), writes the slot's bytes to it, and hands the slot back with {@code SHM_CREDIT}.
 * Nothing from the peer becomes an address except through a bounds-checked slot index. A peer that shrinks the file
 * under the mapping closes the connection with a reason that says so (see {@link RingSender}).
 *
 * <p><b>Trust.</b> A process of the same user on the same host that can open the shared-memory directory can read or
 * change ring contents: the same trust as the host's loopback traffic without TLS. Never used under TLS.
 *
 * <p>Event-loop confined, except where it says otherwise.
 */
public final class SameHostLink {

	private static final Logger log = LoggerFactory.getLogger(SameHostLink.class);

	private final Channel channel;
	private final ShmConfig config;
	private final boolean usable;
	private final String offUnless;
	private final boolean offering;
	private final Consumer<RingSender> installSender;
	private final Runnable resume;
	private final Function<DataHeader, PayloadSink> onData;
	private final Supplier<String> prefix;
	private final TransportSettings settings;
	private final Scheduler blocking = Schedulers.boundedElastic();

	private Ring receiving;
	private Ring pending;
	private RingSender sending;
	private Ring sendRing;
	private boolean offerSeen;
	private Runnable onSettled;
	private ScheduledFuture<?> replyTimer;
	private boolean closed;
	// A ring carries data on this connection; read by diagnostics on any thread.
	private volatile boolean inUse;

	/**
	 * @param channel the connection's channel
	 * @param settings the transport's settings (same-host config, TLS, handshake timeout)
	 * @param offering whether this side offers the ring (the connecting side, which receives the data)
	 * @param installSender routes the outbound queue's data through a ring (on the event loop)
	 * @param resume wakes the outbound queue when a slot came back
	 * @param onData the engine's sink for a data header, as for a TCP frame
	 * @param prefix the connection's log prefix
	 */
	public SameHostLink(Channel channel, TransportSettings settings, boolean offering,
			Consumer<RingSender> installSender, Runnable resume, Function<DataHeader, PayloadSink> onData,
			Supplier<String> prefix) {
		this.channel = channel;
		this.settings = settings;
		this.config = settings.sameHost();
		this.offering = offering;
		this.installSender = installSender;
		this.resume = resume;
		this.onData = onData;
		this.prefix = prefix;
		this.offUnless = config.mode() == SameHost.OFF ? "the same-host path is off"
				: settings.tls() != null ? "TLS is on (the ring would bypass it)"
						: config.hostIdentity() == null ? "this host's identity is unknown (no " + ShmConfig.BOOT_ID
								+ ")" : null;
		this.usable = offUnless == null;
	}

	/** @return whether data moves through a ring on this connection (either direction) */
	public boolean active() {
		return inUse;
	}

	/**
	 * The handshake completed: the offering side offers a ring and runs {@code then} once that is settled (ring in use
	 * or not); the other side runs it at once.
	 */
	public void handshakeDone(ChannelHandlerContext ctx, Runnable then) {
		if (!offering || !usable) {
			if (offering && config.mode() != SameHost.OFF) {
				logFallback(offUnless);
			}
			then.run();
			return;
		}
		onSettled = then;
		offBlocking(() -> {
			Ring ring;
			try {
				ring = Ring.create(config);
			}
			catch (IOException | RuntimeException e) {
				onLoop(() -> fallback("cannot create a ring in " + config.directory() + ": " + e), null);
				return;
			}
			onLoop(() -> {
				if (closed) {
					release(ring);
					return;
				}
				pending = ring;
				ctx.writeAndFlush(ShmFrames.offer(ctx.alloc(), config.hostIdentity(), ring));
				replyTimer = ctx.executor().schedule(this::offerTimedOut, offerTimeout().toNanos(),
						TimeUnit.NANOSECONDS);
			}, ring);
		}, () -> fallback("the transport is shutting down"));
	}

	/** A same-host frame arrived. */
	public void onFrame(ChannelHandlerContext ctx, int type, ByteBuf body) {
		switch (type) {
			case KVFrameCodec.TYPE_DATA_SHM:
				onSlotData(ctx, ShmFrames.decodeSlotData(body));
				break;
			case KVFrameCodec.TYPE_SHM_CREDIT: {
				int slot = ShmFrames.decodeCredit(body);
				if (sending == null) {
					throw new ProtocolException("unexpected SHM_CREDIT frame: no ring carries data from this side");
				}
				sending.credit(slot);
				break;
			}
			case KVFrameCodec.TYPE_SHM_OFFER:
				onOffer(ctx, ShmFrames.decodeOffer(body));
				break;
			case KVFrameCodec.TYPE_SHM_REPLY:
				onReply(ShmFrames.decodeReply(body));
				break;
			default:
				throw new ProtocolException("unknown frame type " + KVFrameCodec.typeName(type));
		}
	}

	/** The connection closed: no ring is used any more; rings are unmapped and files unlinked off the event loop. */
	public void close() {
		closed = true;
		inUse = false;
		try {
			cancelTimer();
			if (sending != null) {
				sending.close();
			}
		}
		finally {
			// A fault of a truncated ring may surface here (on JDK 17 a copy's fault is raised at the thread's next
			// entry into the VM): the rings are released whatever it interrupted.
			release(receiving);
			release(pending);
			release(sendRing);
			receiving = null;
			pending = null;
			sendRing = null;
		}
	}

	private void onSlotData(ChannelHandlerContext ctx, ShmFrames.SlotData data) {
		Ring ring = receiving;
		if (ring == null) {
			throw new ProtocolException("unexpected DATA_SHM frame: no ring was agreed on this connection");
		}
		DataHeader header = data.header();
		if (data.slot() < 0 || data.slot() >= ring.slots()) {
			throw new ProtocolException("malformed DATA_SHM frame: slot : " + data.slot() + " (expected: 0.."
					+ (ring.slots() - 1) + ")");
		}
		if (header.payloadLength() > ring.slotSize()) {
			throw new ProtocolException("malformed DATA_SHM frame: payload of " + header.payloadLength()
					+ " bytes (chunkLen " + header.chunkLen() + " x count " + header.count()
					+ ") exceeds the ring's slot size " + ring.slotSize());
		}
		PayloadSink sink = onData.apply(header);
		if (sink != null) {
			int length = (int) header.payloadLength();
			if (length > 0) {
				ByteBuf slot = NativeMemory.wrap(ring.slotAddress(data.slot()), length);
				try {
					sink.write(slot);
				}
				catch (InternalError e) {
					// How the JVM reports a fault of the read: the peer shrank the file under the mapping.
					throw new ProtocolException("the shared-memory ring of " + peer() + " faulted during a copy "
							+ "(truncated by the peer?): " + e.getMessage(), e);
				}
				finally {
					slot.release();
				}
			}
			sink.complete();
		}
		ctx.writeAndFlush(ShmFrames.credit(ctx.alloc(), data.slot()), ctx.voidPromise());
	}

	private void onOffer(ChannelHandlerContext ctx, ShmFrames.Offer offer) {
		if (offering || offerSeen) {
			throw new ProtocolException("unexpected SHM_OFFER frame: " + (offering ? "this side offers the ring"
					: "a ring was offered already"));
		}
		offerSeen = true;
		if (!usable) {
			refuse(ctx, offUnless + " on the accepting side");
			return;
		}
		if (!config.hostIdentity().equals(offer.hostIdentity())) {
			refuse(ctx, "another host (host identity " + offer.hostIdentity() + " there, " + config.hostIdentity()
					+ " here)");
			return;
		}
		offBlocking(() -> {
			Ring ring;
			try {
				ring = Ring.open(config, offer.path(), offer.nonce(), offer.slots(), offer.slotSize());
			}
			catch (IOException | RuntimeException e) {
				onLoop(() -> refuse(ctx, "cannot map the offered ring: " + e.getMessage()), null);
				return;
			}
			// Both sides have it mapped now (decode since it created it): the earliest moment the name can go, even
			// if decode dies before it reads the answer.
			RingFiles.unlink(ring.path());
			onLoop(() -> {
				if (closed) {
					release(ring);
					return;
				}
				sendRing = ring;
				sending = new RingSender(ring, resume, peer());
				inUse = true;
				log.debug("{} same-host ring in use: {}", prefix.get(), ring);
				// The answer precedes every DATA_SHM frame: installing the sender writes queued blocks at once.
				ctx.writeAndFlush(ShmFrames.reply(ctx.alloc(), true, ""));
				installSender.accept(sending);
			}, ring);
		}, () -> refuse(ctx, "the transport is shutting down"));
	}

	private void refuse(ChannelHandlerContext ctx, String reason) {
		logFallback(reason);
		ctx.writeAndFlush(ShmFrames.reply(ctx.alloc(), false, reason));
	}

	private void onReply(ShmFrames.Reply reply) {
		Ring ring = pending;
		if (ring == null) {
			throw new ProtocolException("unexpected SHM_REPLY frame: no ring was offered");
		}
		pending = null;
		if (reply.accepted()) {
			receiving = ring;
			inUse = true;
			log.debug("{} same-host ring in use: {}", prefix.get(), ring);
			offBlocking(() -> RingFiles.unlink(ring.path()), () -> { });
			settle();
		}
		else {
			release(ring);
			fallback("the peer refused the ring: " + reply.reason());
		}
	}

	/**
	 * No answer in time: TCP from now on, and the file loses its name before {@code connect} completes, so that a
	 * process killed later leaves nothing behind. The mapping stays until an answer comes or the connection ends: a
	 * prefill that mapped the file before it lost its name shares its memory and may still accept it; one that tries
	 * later cannot open it and refuses.
	 */
	private void offerTimedOut() {
		replyTimer = null;
		Ring ring = pending;
		if (closed || ring == null) {
			return;
		}
		String reason = "no SHM_REPLY within " + TransportSettings.format(offerTimeout());
		offBlocking(() -> {
			RingFiles.unlink(ring.path());
			onLoop(() -> {
				if (onSettled != null) {
					fallback(reason);
				}
			}, null);
		}, () -> {
			RingFiles.unlink(ring.path());
			fallback(reason);
		});
	}

	private Duration offerTimeout() {
		return config.offerTimeout() != null ? config.offerTimeout() : settings.handshakeTimeout();
	}

	private String peer() {
		return channel.remoteAddress() instanceof InetSocketAddress a ? a.getHostString() + ":" + a.getPort()
				: String.valueOf(channel.remoteAddress());
	}

	private void fallback(String reason) {
		if (closed || onSettled == null && active()) {
			return;
		}
		logFallback(reason);
		settle();
	}

	private void settle() {
		cancelTimer();
		Runnable then = onSettled;
		onSettled = null;
		if (then != null) {
			then.run();
		}
	}

	private void logFallback(String reason) {
		if (config.fallbackLogged().compareAndSet(false, true)) {
			log.info("{} KV data goes over TCP, not shared memory: {}", prefix.get(), reason);
		}
		else {
			log.debug("{} KV data goes over TCP, not shared memory: {}", prefix.get(), reason);
		}
	}

	private void cancelTimer() {
		if (replyTimer != null) {
			replyTimer.cancel(false);
			replyTimer = null;
		}
	}

	/** Unmaps and unlinks off the event loop; the event loop has let go of the ring. */
	private void release(Ring ring) {
		if (ring == null) {
			return;
		}
		offBlocking(() -> {
			ring.unmap();
			RingFiles.unlink(ring.path());
		}, () -> {
			ring.unmap();
			RingFiles.unlink(ring.path());
		});
	}

	private void offBlocking(Runnable task, Runnable rejected) {
		try {
			blocking.schedule(task);
		}
		catch (RejectedExecutionException e) {
			rejected.run();
		}
	}

	/** Runs {@code task} on the event loop; when it is gone, releases {@code orphan} (off the loop, from here). */
	private void onLoop(Runnable task, Ring orphan) {
		try {
			channel.eventLoop().execute(task);
		}
		catch (RejectedExecutionException e) {
			if (orphan != null) {
				orphan.unmap();
				RingFiles.unlink(orphan.path());
			}
		}
	}
}
