package io.kvferry.transport.netty.internal;

import java.time.Duration;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

import io.kvferry.ProtocolException;
import io.kvferry.spi.KVMessage;
import io.netty.channel.ChannelHandlerContext;

/**
 * The kvferry handshake of one connection, as a state machine apart from the traffic that follows it.
 *
 * <p>On connect each side writes its preface and an {@code AUTH} frame (its nonce, whether it has a shared secret,
 * its frame limit). With a shared secret on both sides each then proves it with an {@code AUTH_PROOF} (see
 * {@link SharedSecret}). The handshake completes when the peer's preface was valid and its {@code AUTH} (and, with
 * secrets, its proof) checked out; a side configured differently from its peer is refused with a message saying how to
 * fix it. A handshake not completed within {@link TransportSettings#handshakeTimeout()} is reported to the
 * connection, which closes.
 *
 * <p>Event-loop confined: every method runs on the connection's event loop.
 */
final class Handshake {

	private final TransportSettings settings;
	private final SharedSecret secret;
	private final SharedSecret.Role role;

	private byte[] ownNonce;
	private boolean prefaceReceived;
	private KVFrameCodec.Auth peerAuth;
	private ScheduledFuture<?> timer;
	private boolean done;
	private ProtocolException failure;

	Handshake(TransportSettings settings, SharedSecret.Role role) {
		this.settings = settings;
		this.secret = settings.sharedSecret();
		this.role = role;
	}

	/**
	 * Writes this side's preface and {@code AUTH}, and arms the timeout.
	 *
	 * @param onTimeout run when the handshake is still not done after the timeout
	 */
	void start(ChannelHandlerContext ctx, Runnable onTimeout) {
		ownNonce = secret != null ? secret.newNonce() : new byte[SharedSecret.NONCE_LENGTH];
		ctx.write(KVFrameCodec.encodePreface(ctx.alloc(), KVMessage.PROTOCOL_VERSION));
		ctx.writeAndFlush(KVFrameCodec.encodeAuth(ctx.alloc(),
				new KVFrameCodec.Auth(secret != null, ownNonce, settings.maxFrameLength())));
		timer = ctx.executor().schedule(() -> {
			if (!done) {
				onTimeout.run();
			}
		}, settings.handshakeTimeout().toNanos(), TimeUnit.NANOSECONDS);
	}

	void onPreface() {
		prefaceReceived = true;
	}

	/**
	 * @return true when the handshake is complete (no shared secret); false when this side sent its proof and waits
	 *         for the peer's
	 * @throws ProtocolException naming the mismatch
	 */
	boolean onAuth(ChannelHandlerContext ctx, KVFrameCodec.Auth auth) {
		if (peerAuth != null) {
			throw new ProtocolException("unexpected second AUTH frame");
		}
		peerAuth = auth;
		if (secret == null) {
			if (auth.hasSecret()) {
				throw new ProtocolException("shared secret mismatch: the peer requires a shared secret and none is "
						+ "configured here (configure the same sharedSecret on both sides)");
			}
			return complete();
		}
		if (!auth.hasSecret()) {
			throw new ProtocolException("peer did not prove the shared secret: it has none configured (configure the "
					+ "same sharedSecret on both sides)");
		}
		byte[] proof = secret.proof(role, auth.nonce(), ownNonce);
		ctx.writeAndFlush(KVFrameCodec.encodeAuthProof(ctx.alloc(), proof));
		return false;
	}

	/**
	 * @return true: the handshake is complete
	 * @throws ProtocolException when the proof is unexpected or does not verify
	 */
	boolean onAuthProof(byte[] proof) {
		if (secret == null || peerAuth == null || done) {
			throw new ProtocolException("unexpected AUTH_PROOF frame ("
					+ (secret == null ? "no shared secret is configured here"
							: peerAuth == null ? "before the peer's AUTH" : "after the handshake")
					+ ")");
		}
		if (!secret.verify(role.peer(), proof, ownNonce, peerAuth.nonce())) {
			throw new ProtocolException("shared secret mismatch: the peer's proof does not verify (the two sides have "
					+ "different secrets)");
		}
		return complete();
	}

	private boolean complete() {
		if (!prefaceReceived) {
			// The decoder reports AUTH only after a valid preface; kept as a guard for the ordering it relies on.
			throw new ProtocolException("AUTH before the preface");
		}
		done = true;
		stop();
		return true;
	}

	/** Rejects engine traffic before the handshake completed. */
	void requireDone(String what) {
		if (done) {
			return;
		}
		throw new ProtocolException(secret != null
				? "peer did not prove the shared secret: " + what + " arrived before the handshake completed"
				: "handshake incomplete: " + what + " arrived before the peer's AUTH frame");
	}

	/** Remembers why the handshake failed, when it did before completing; the latest failure counts. */
	void failed(ProtocolException cause) {
		if (!done) {
			failure = cause;
		}
	}

	/** Disarms the timeout (the connection closed). */
	void stop() {
		if (timer != null) {
			timer.cancel(false);
			timer = null;
		}
	}

	boolean isDone() {
		return done;
	}

	/** @return the peer's frame limit, once its {@code AUTH} arrived */
	int peerMaxFrameLength() {
		return peerAuth == null ? settings.maxFrameLength() : peerAuth.maxFrameLength();
	}

	/** @return why the handshake failed, or {@code null} */
	ProtocolException failure() {
		return failure;
	}

	boolean prefaceReceived() {
		return prefaceReceived;
	}

	/** @return how long a handshake may take */
	Duration timeout() {
		return settings.handshakeTimeout();
	}
}
