package io.kvferry.transport.netty.internal;

import java.time.Duration;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

import io.kvferry.HostPort;
import io.kvferry.ProtocolException;
import io.kvferry.spi.KVMessage;
import io.netty.channel.ChannelHandlerContext;

/**
 * The kvferry handshake of one connection, as a state machine apart from the traffic that follows it.
 *
 * <p>On connect each side writes its preface and an {@code AUTH} frame (its nonce, whether it has a shared secret,
 * its frame limit and, from the connecting side, the endpoint it dialled). With a shared secret on both sides the
 * connecting side then proves it with an {@code AUTH_PROOF}; the accepting side checks that the dialled endpoint is
 * one of its names and that proof, and only then proves the secret in turn (see {@link SharedSecret} for what this
 * order and the binding prevent). The handshake completes when the peer's preface was valid and its {@code AUTH}
 * (and, with secrets, its proof) checked out; a side configured differently from its peer is refused with a message
 * saying how to fix it. A handshake not completed within {@link TransportSettings#handshakeTimeout()} is reported to
 * the connection, which closes.
 *
 * <p>Event-loop confined: every method runs on the connection's event loop.
 */
final class Handshake {

	/** Longest peer-supplied refusal reason kept in a failure message. */
	private static final int MAX_REJECT_REASON = 500;

	private final TransportSettings settings;
	private final SharedSecret secret;
	private final SharedSecret.Role role;

	private byte[] ownNonce;
	// What the connecting side dialled: its own announcement there, the peer's on the accepting side once its AUTH
	// arrived. Both proofs cover it.
	private DialledEndpoint dialled = DialledEndpoint.NONE;
	private ListenerNames names;
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
	 * @param remote the endpoint the connecting side dialled (ignored on the accepting side)
	 * @param onTimeout run when the handshake is still not done after the timeout
	 */
	void start(ChannelHandlerContext ctx, HostPort remote, Runnable onTimeout) {
		ownNonce = secret != null ? secret.newNonce() : new byte[SharedSecret.NONCE_LENGTH];
		if (role == SharedSecret.Role.CONNECTING) {
			dialled = DialledEndpoint.of(remote, ctx.channel().remoteAddress());
		}
		else {
			names = ListenerNames.of(ctx.channel().localAddress(), settings.advertisedAddresses());
		}
		ctx.write(KVFrameCodec.encodePreface(ctx.alloc(), KVMessage.PROTOCOL_VERSION));
		ctx.writeAndFlush(KVFrameCodec.encodeAuth(ctx.alloc(), new KVFrameCodec.Auth(secret != null, ownNonce,
				settings.maxFrameLength(), settings.heartbeatMillis(), dialled)));
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
	 * @return true when the handshake is complete (no shared secret); false when it waits for a proof (the connecting
	 *         side has sent its own)
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
		if (role == SharedSecret.Role.CONNECTING) {
			ctx.writeAndFlush(KVFrameCodec.encodeAuthProof(ctx.alloc(),
					secret.proof(role, auth.nonce(), ownNonce, dialled)));
			return false;
		}
		if (auth.dialled().isNone()) {
			throw new ProtocolException("peer did not say which endpoint it dialled (its AUTH frame has none, as "
					+ "only an accepting side's has)");
		}
		if (!names.answers(auth.dialled())) {
			throw new ProtocolException("dialled endpoint mismatch: the peer dialled " + auth.dialled()
					+ ", which is not this listener; it answers to " + names + ". Either a relay or a stale "
					+ "registration forwarded the peer here, or peers reach this listener at an address it was not "
					+ "told (NAT, port forwarding, a service name): add that address to advertisedAddresses");
		}
		dialled = auth.dialled();
		return false;
	}

	/**
	 * @return true: the handshake is complete (on the accepting side after writing its own proof)
	 * @throws ProtocolException when the proof is unexpected or does not verify
	 */
	boolean onAuthProof(ChannelHandlerContext ctx, byte[] proof) {
		if (secret == null || peerAuth == null || done) {
			throw new ProtocolException("unexpected AUTH_PROOF frame ("
					+ (secret == null ? "no shared secret is configured here"
							: peerAuth == null ? "before the peer's AUTH" : "after the handshake")
					+ ")");
		}
		if (!secret.verify(role.peer(), proof, ownNonce, peerAuth.nonce(), dialled)) {
			throw new ProtocolException("shared secret mismatch: the peer's proof does not verify (the two sides have "
					+ "different secrets, or something between them altered the handshake, as a relay that rewrites "
					+ "the dialled endpoint does)");
		}
		if (role == SharedSecret.Role.ACCEPTING) {
			// Proven only now: a peer without the secret never sees a proof from this side.
			ctx.writeAndFlush(KVFrameCodec.encodeAuthProof(ctx.alloc(),
					secret.proof(role, peerAuth.nonce(), ownNonce, dialled)));
		}
		return complete();
	}

	/**
	 * @param reason what the peer's {@code REJECT} said
	 * @return the failure of a handshake the peer refused (its reason shortened, control characters replaced)
	 */
	ProtocolException refused(String reason) {
		StringBuilder b = new StringBuilder("the peer refused the handshake: ");
		int n = Math.min(reason.length(), MAX_REJECT_REASON);
		for (int i = 0; i < n; i++) {
			char c = reason.charAt(i);
			b.append(c < ' ' || c == 0x7f ? '?' : c);
		}
		return new ProtocolException(reason.length() > n ? b.append("...").toString() : b.toString());
	}

	/**
	 * The accepting side says why it refuses a kvferry peer during the handshake, before the decoder closes the
	 * channel: the connecting side cannot see that judgement otherwise, since this side proves nothing to a peer it
	 * refuses. A handshake reason holds no secret: what the peer sent, and this listener's own names. Nothing is
	 * written on the connecting side, after the handshake, before the peer's preface or on a closed channel.
	 */
	void tellRefused(ChannelHandlerContext ctx, String reason) {
		if (role != SharedSecret.Role.ACCEPTING || done || !prefaceReceived || ctx == null
				|| !ctx.channel().isActive()) {
			return;
		}
		int limit = peerMaxFrameLength();
		// At most 3 UTF-8 bytes a char, after the string's 4-byte length: always within the peer's frame limit.
		String text = reason.length() > (limit - 4) / 3 ? reason.substring(0, (limit - 4) / 3) : reason;
		ctx.writeAndFlush(KVFrameCodec.encode(ctx.alloc(), new KVMessage.Reject(text), limit));
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

	/** @return the peer's heartbeat interval once its {@code AUTH} arrived, this side's own until then */
	Duration peerHeartbeatInterval() {
		return peerAuth == null ? settings.heartbeatInterval() : peerAuth.heartbeatInterval();
	}

	/** @return why the handshake failed, or {@code null} */
	ProtocolException failure() {
		return failure;
	}

	/** @return which side of the connection this is */
	SharedSecret.Role role() {
		return role;
	}

	boolean prefaceReceived() {
		return prefaceReceived;
	}
}
