package io.kvferry.transport.netty.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import io.kvferry.HostPort;
import io.kvferry.ProtocolException;
import io.kvferry.spi.KVMessage;
import io.kvferry.test.RecordingHandler;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.embedded.EmbeddedChannel;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The shared-secret handshake's binding to the dialled endpoint and its order, on an {@link EmbeddedChannel}: what
 * each side writes and when, what it refuses and what it says when it does.
 */
class HandshakeTest {

	private static final SharedSecret SECRET = SharedSecret.of("s3cret".getBytes(StandardCharsets.UTF_8));
	private static final HostPort PREFILL = new HostPort("prefill.test", 7000);
	private static final TransportSettings SETTINGS = TransportSettings.DEFAULT
			.withHeartbeatInterval(Duration.ofSeconds(1)).withMaxFrameLength(4096).withSharedSecret(SECRET);
	/** The accepting side's names: an embedded channel has no IP address of its own. */
	private static final TransportSettings LISTENER = SETTINGS.withAdvertisedAddresses(List.of(PREFILL));

	private final AtomicInteger accepted = new AtomicInteger();
	private final RecordingHandler handler = new RecordingHandler();
	private NettyKVConnection connection;
	private EmbeddedChannel channel;

	@AfterEach
	void releaseEverything() {
		if (channel != null) {
			channel.finishAndReleaseAll();
		}
	}

	/**
	 * Opens a connection and reads its preface and {@code AUTH}.
	 *
	 * @param dialled the endpoint a connecting side dialled, or {@code null} for an accepting side
	 */
	private KVFrameCodec.Auth open(TransportSettings settings, HostPort dialled) {
		channel = new EmbeddedChannel(new ChannelInitializer<Channel>() {
			@Override
			protected void initChannel(Channel ch) {
				connection = dialled == null ? NettyKVConnection.install(ch, settings, null, c -> {
					accepted.incrementAndGet();
					return handler;
				}, null) : NettyKVConnection.install(ch, settings, handler, null, dialled);
			}
		});
		channel.freezeTime();
		List<ByteBuf> out = outbound();
		assertThat(out).hasSize(2);
		out.get(0).release();
		return (KVFrameCodec.Auth) decode(out.get(1));
	}

	private void inbound(ByteBuf buf) {
		channel.writeInbound(buf);
		channel.runPendingTasks();
	}

	/** Feeds a peer's preface and {@code AUTH}. */
	private void peerAuth(byte[] nonce, DialledEndpoint dialled) {
		inbound(KVFrameCodec.encodePreface(UnpooledByteBufAllocator.DEFAULT, KVMessage.PROTOCOL_VERSION));
		inbound(KVFrameCodec.encodeAuth(UnpooledByteBufAllocator.DEFAULT,
				new KVFrameCodec.Auth(true, nonce, 16 << 20, dialled)));
	}

	private List<ByteBuf> outbound() {
		channel.runPendingTasks();
		List<ByteBuf> out = new ArrayList<>();
		ByteBuf b;
		while ((b = channel.readOutbound()) != null) {
			out.add(b);
		}
		return out;
	}

	/** @return the frame's {@link KVFrameCodec.Auth}, proof bytes or message; releases it */
	private static Object decode(ByteBuf frame) {
		try {
			assertThat(frame.readInt()).isEqualTo(frame.readableBytes());
			int type = frame.readUnsignedByte();
			if (type == KVFrameCodec.TYPE_AUTH) {
				return KVFrameCodec.decodeAuth(frame);
			}
			if (type == KVFrameCodec.TYPE_AUTH_PROOF) {
				return KVFrameCodec.decodeAuthProof(frame);
			}
			return KVFrameCodec.decode(type, frame);
		}
		finally {
			frame.release();
		}
	}

	private List<Object> decodedOutbound() {
		return outbound().stream().map(HandshakeTest::decode).toList();
	}

	@Test
	void theAcceptingSideRefusesAnEndpointThatIsNotOneOfItsNamesSayingWhichNamesItAnswersTo() {
		open(LISTENER, null);
		// A relay at 10.9.9.9:6000, reached under a name of its own, forwarding the connecting side's AUTH unchanged.
		peerAuth(SECRET.newNonce(), new DialledEndpoint("relay.test:6000", "10.9.9.9:6000"));

		String expected = "dialled endpoint mismatch: the peer dialled relay.test:6000 (10.9.9.9:6000), which is not "
				+ "this listener; it answers to prefill.test:7000 (advertised).";
		assertThat(channel.isOpen()).isFalse();
		assertThat(accepted).hasValue(0);
		assertThat(connection.handshakeFuture().cause()).isInstanceOf(ProtocolException.class)
				.hasMessageContaining(expected).hasMessageContaining("add that address to advertisedAddresses");
		// It says why, and proves nothing to a peer it refuses.
		List<Object> written = decodedOutbound();
		assertThat(written).hasSize(1);
		assertThat(((KVMessage.Reject) written.get(0)).reason()).startsWith(expected);
	}

	@Test
	void theAcceptingSideNeverProvesBeforeThePeerDidSoItIsNoOracle() {
		KVFrameCodec.Auth own = open(LISTENER, null);
		// An attacker connects directly, names the listener correctly, and hopes for a proof over its nonce.
		byte[] chosen = new byte[SharedSecret.NONCE_LENGTH];
		DialledEndpoint dialled = new DialledEndpoint(PREFILL.toString(), "");
		peerAuth(chosen, dialled);
		assertThat(outbound()).isEmpty();
		inbound(KVFrameCodec.encodeAuthProof(UnpooledByteBufAllocator.DEFAULT, new byte[SharedSecret.PROOF_LENGTH]));

		List<Object> written = decodedOutbound();
		assertThat(written).singleElement().isInstanceOf(KVMessage.Reject.class);
		assertThat(((KVMessage.Reject) written.get(0)).reason())
				.startsWith("shared secret mismatch: the peer's proof does not verify");
		assertThat(own.hasSecret()).isTrue();
		assertThat(accepted).hasValue(0);
	}

	@Test
	void theAcceptingSideAnswersToTheAddressThePeerReachedWhenItDialledAName() {
		KVFrameCodec.Auth own = open(SETTINGS.withAdvertisedAddresses(List.of(new HostPort("10.0.0.7", 7000))), null);
		byte[] peerNonce = SECRET.newNonce();
		DialledEndpoint dialled = new DialledEndpoint("prefill-0.svc:7000", "10.0.0.7:7000");
		peerAuth(peerNonce, dialled);
		inbound(KVFrameCodec.encodeAuthProof(UnpooledByteBufAllocator.DEFAULT,
				SECRET.proof(SharedSecret.Role.CONNECTING, own.nonce(), peerNonce, dialled)));

		assertThat(connection.handshakeFuture().isSuccess()).isTrue();
		assertThat(accepted).hasValue(1);
		byte[] proof = (byte[]) decodedOutbound().get(0);
		assertThat(SECRET.verify(SharedSecret.Role.ACCEPTING, proof, peerNonce, own.nonce(), dialled)).isTrue();
	}

	@Test
	void theConnectingSideAnnouncesWhatItDialledAndProvesOverIt() {
		KVFrameCodec.Auth own = open(SETTINGS, PREFILL);
		// An embedded channel reaches no IP address: the announcement has the endpoint only.
		assertThat(own.dialled()).isEqualTo(new DialledEndpoint("prefill.test:7000", ""));
		byte[] peerNonce = SECRET.newNonce();
		peerAuth(peerNonce, DialledEndpoint.NONE);

		byte[] proof = (byte[]) decodedOutbound().get(0);
		assertThat(SECRET.verify(SharedSecret.Role.CONNECTING, proof, peerNonce, own.nonce(), own.dialled())).isTrue();
		inbound(KVFrameCodec.encodeAuthProof(UnpooledByteBufAllocator.DEFAULT,
				SECRET.proof(SharedSecret.Role.ACCEPTING, own.nonce(), peerNonce, own.dialled())));
		assertThat(connection.handshakeFuture().isSuccess()).isTrue();
	}

	@Test
	void theConnectingSideRefusesAProofOverAnotherEndpointThanTheOneItDialled() {
		KVFrameCodec.Auth own = open(SETTINGS, PREFILL);
		byte[] peerNonce = SECRET.newNonce();
		peerAuth(peerNonce, DialledEndpoint.NONE);
		outbound().forEach(ByteBuf::release);
		// A relay rewrote the announcement to the real listener's name; that listener proved over it.
		byte[] overRewritten = SECRET.proof(SharedSecret.Role.ACCEPTING, own.nonce(), peerNonce,
				new DialledEndpoint("10.0.0.7:7000", "10.0.0.7:7000"));
		inbound(KVFrameCodec.encodeAuthProof(UnpooledByteBufAllocator.DEFAULT, overRewritten));

		assertThat(channel.isOpen()).isFalse();
		assertThat(connection.handshakeFuture().cause()).isInstanceOf(ProtocolException.class)
				.hasMessageContaining("shared secret mismatch: the peer's proof does not verify");
		assertThat(handler.events).isEmpty();
		// The connecting side does not send REJECT (only an accepting side explains itself).
		assertThat(outbound()).isEmpty();
	}

	@Test
	void aRejectDuringTheHandshakeFailsItWithThePeersReasonSanitized() {
		open(SETTINGS, PREFILL);
		peerAuth(SECRET.newNonce(), DialledEndpoint.NONE);
		outbound().forEach(ByteBuf::release);
		inbound(KVFrameCodec.encode(UnpooledByteBufAllocator.DEFAULT,
				new KVMessage.Reject("dialled endpoint mismatch:\nforged line" + "x".repeat(2000)), 4096));

		assertThat(channel.isOpen()).isFalse();
		assertThat(handler.events).isEmpty();
		String message = connection.handshakeFuture().cause().getMessage();
		assertThat(message).contains("the peer refused the handshake: dialled endpoint mismatch:?forged line")
				.endsWith("...").doesNotContain("\n");
		assertThat(message.length()).isLessThan(700);
	}

	@Test
	void everyFlippedBitOfTheConnectingSidesNonceEndpointOrProofIsRefused() {
		byte[] peerNonce = SECRET.newNonce();
		DialledEndpoint dialled = new DialledEndpoint(PREFILL.toString(), "10.0.0.7:7000");
		int refused = 0;
		// The proof has to answer the accepting side's nonce, which is fresh per connection: flip after it is known.
		for (int field = 0; field < 2; field++) {
			int length = field == 0 ? authBytes(peerNonce, dialled).length : SharedSecret.PROOF_LENGTH;
			// AUTH: every byte after the flags and before the frame limit (the nonce), and the endpoint's bytes.
			for (int at = 0; at < length; at++) {
				if (field == 0 && !coveredByTheProof(at)) {
					continue;
				}
				for (int bit = 0; bit < 8; bit++) {
					KVFrameCodec.Auth own = open(LISTENER, null);
					byte[] auth = authBytes(peerNonce, dialled);
					byte[] proof = SECRET.proof(SharedSecret.Role.CONNECTING, own.nonce(), peerNonce, dialled);
					(field == 0 ? auth : proof)[at] ^= (byte) (1 << bit);
					inbound(KVFrameCodec.encodePreface(UnpooledByteBufAllocator.DEFAULT, KVMessage.PROTOCOL_VERSION));
					byte[] stream = concat(auth, proofBytes(proof));
					for (int i = 0; i < stream.length && channel.isOpen(); i++) {
						inbound(Unpooled.wrappedBuffer(stream, i, 1));
					}
					assertThat(connection.handshakeFuture().isSuccess()).as("flip of bit %d at %d of %s", bit, at,
							field == 0 ? "AUTH" : "AUTH_PROOF").isFalse();
					assertThat(outbound().stream().map(HandshakeTest::decode))
							.noneMatch(o -> o instanceof byte[]);
					channel.finishAndReleaseAll();
					channel = null;
					refused++;
				}
			}
		}
		assertThat(accepted).hasValue(0);
		assertThat(refused).isGreaterThan(8 * (SharedSecret.NONCE_LENGTH + SharedSecret.PROOF_LENGTH));
	}

	/**
	 * @return whether the byte at {@code at} of the AUTH frame is the nonce or part of the endpoint strings (not the
	 *         frame limit nor the heartbeat interval after it, which the proofs do not cover)
	 */
	private static boolean coveredByTheProof(int at) {
		int nonce = KVFrameCodec.FRAME_PREFIX_LENGTH + 1;
		int frameLimit = nonce + SharedSecret.NONCE_LENGTH;
		return at >= nonce && at < frameLimit || at >= frameLimit + 4 + 4;
	}

	private static byte[] authBytes(byte[] nonce, DialledEndpoint dialled) {
		return bytes(KVFrameCodec.encodeAuth(UnpooledByteBufAllocator.DEFAULT,
				new KVFrameCodec.Auth(true, nonce, 16 << 20, dialled)));
	}

	private static byte[] concat(byte[] a, byte[] b) {
		byte[] both = Arrays.copyOf(a, a.length + b.length);
		System.arraycopy(b, 0, both, a.length, b.length);
		return both;
	}

	private static byte[] proofBytes(byte[] proof) {
		return bytes(KVFrameCodec.encodeAuthProof(UnpooledByteBufAllocator.DEFAULT, proof));
	}

	private static byte[] bytes(ByteBuf frame) {
		try {
			return ByteBufUtil.getBytes(frame);
		}
		finally {
			frame.release();
		}
	}
}
