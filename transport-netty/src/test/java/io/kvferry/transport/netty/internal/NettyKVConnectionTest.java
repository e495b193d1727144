package io.kvferry.transport.netty.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import io.kvferry.HostPort;
import io.kvferry.KVFerryException;
import io.kvferry.KVPoll;
import io.kvferry.MemoryRegion;
import io.kvferry.ProtocolException;
import io.kvferry.RoomPriority;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.RegionKind;
import io.kvferry.spi.SendGate;
import io.kvferry.test.RecordingHandler;
import io.kvferry.test.RegionSink;
import io.kvferry.test.Samples;
import io.kvferry.test.Sent;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.embedded.EmbeddedChannel;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;

/**
 * The connection handler on an {@link EmbeddedChannel}: handshake, inbound dispatch, ordered sending, closing and
 * heartbeats on the channel's fake clock.
 */
class NettyKVConnectionTest {

	private static final Duration TIMEOUT = Duration.ofSeconds(5);
	private static final TransportSettings SETTINGS = TransportSettings.DEFAULT
			.withHeartbeatInterval(Duration.ofSeconds(1)).withMaxFrameLength(4096);
	/** What a connecting peer says it dialled, and the name an accepting side answers to for it. */
	private static final DialledEndpoint DIALLED = new DialledEndpoint("prefill.test:7000", "");
	private static final List<HostPort> NAMES = List.of(new HostPort("prefill.test", 7000));

	private final RecordingHandler handler = new RecordingHandler();
	private final AtomicReference<KVConnection> accepted = new AtomicReference<>();
	private NettyKVConnection connection;
	private EmbeddedChannel channel;

	@AfterEach
	void releaseEverything() {
		if (channel != null) {
			channel.finishAndReleaseAll();
		}
	}

	private void open(boolean accepting) {
		open(accepting, SETTINGS);
	}

	/** Opens the channel and checks what the connection writes first: the preface and its AUTH frame. */
	private KVFrameCodec.Auth open(boolean accepting, TransportSettings settings) {
		channel = new EmbeddedChannel(new ChannelInitializer<Channel>() {
			@Override
			protected void initChannel(Channel ch) {
				connection = accepting
						? NettyKVConnection.install(ch, settings, null, c -> {
							accepted.set(c);
							return handler;
						}, null)
						: NettyKVConnection.install(ch, settings, handler, null, null);
			}
		});
		channel.freezeTime();
		ByteBuf preface = readOutbound();
		ByteBuf auth = readOutbound();
		try {
			assertThat(ByteBufUtil.hexDump(preface)).isEqualTo("4b564652" + String.format("%04x",
					KVMessage.PROTOCOL_VERSION));
			assertThat(auth.readInt()).isEqualTo(auth.readableBytes());
			assertThat(auth.readUnsignedByte()).isEqualTo((short) KVFrameCodec.TYPE_AUTH);
			return KVFrameCodec.decodeAuth(auth);
		}
		finally {
			preface.release();
			auth.release();
		}
	}

	private void handshake() {
		inbound(KVFrameCodec.encodePreface(UnpooledByteBufAllocator.DEFAULT, KVMessage.PROTOCOL_VERSION));
		assertThat(connection.handshakeFuture().isDone()).isFalse();
		inbound(KVFrameCodec.encodeAuth(UnpooledByteBufAllocator.DEFAULT, noSecret()));
		assertThat(connection.handshakeFuture().isSuccess()).isTrue();
	}

	/** The AUTH of a peer without a secret that accepts the same frames and heartbeats as this side. */
	private static KVFrameCodec.Auth noSecret() {
		return new KVFrameCodec.Auth(false, new byte[SharedSecret.NONCE_LENGTH], SETTINGS.maxFrameLength(),
				SETTINGS.heartbeatMillis(), DialledEndpoint.NONE);
	}

	private void inbound(ByteBuf buf) {
		channel.writeInbound(buf);
		channel.runPendingTasks();
	}

	private ByteBuf readOutbound() {
		channel.runPendingTasks();
		ByteBuf out = channel.readOutbound();
		assertThat(out).as("outbound buffer").isNotNull();
		return out;
	}

	/** @return every outbound byte written so far, as one buffer (caller releases) */
	private ByteBuf drainOutbound() {
		channel.runPendingTasks();
		CompositeByteBuf all = Unpooled.compositeBuffer(Integer.MAX_VALUE);
		ByteBuf b;
		while ((b = channel.readOutbound()) != null) {
			all.addComponent(true, b);
		}
		return all;
	}

	private List<KVMessage> decodeFrames(ByteBuf stream) {
		List<KVMessage> messages = new ArrayList<>();
		while (stream.isReadable()) {
			int length = stream.readInt();
			int type = stream.readUnsignedByte();
			messages.add(KVFrameCodec.decode(type, stream.readSlice(length - 1)));
		}
		return messages;
	}

	@Test
	void acceptorIsCalledOnlyAfterAValidPrefaceAndAuth() {
		open(true);
		assertThat(accepted.get()).isNull();
		handshake();
		assertThat(accepted.get()).isSameAs(connection);
		inbound(KVFrameCodec.encode(UnpooledByteBufAllocator.DEFAULT, new KVMessage.Abort(3, "x"), 4096));
		assertThat(handler.events).containsExactly(new KVMessage.Abort(3, "x"));
	}

	@Test
	void badPrefaceFailsTheHandshakeWithoutReachingTheAcceptor() {
		open(true);
		inbound(Unpooled.copiedBuffer(new byte[] { 'K', 'V', 'F', 'R', 0, KVMessage.PROTOCOL_VERSION + 1 }));
		assertThat(channel.isOpen()).isFalse();
		assertThat(accepted.get()).isNull();
		assertThat(connection.handshakeFuture().cause())
				.hasMessageContaining("version : " + (KVMessage.PROTOCOL_VERSION + 1) + " (expected: "
						+ KVMessage.PROTOCOL_VERSION + ")");
		assertThat(handler.closeReasons).isEmpty();
	}

	@Test
	void withoutSecretsTheAuthFrameCarriesNoFlagAndAZeroNonce() {
		KVFrameCodec.Auth auth = open(false, SETTINGS);
		// A connecting side still says what it dialled (an embedded channel reaches no IP address).
		assertThat(auth).isEqualTo(new KVFrameCodec.Auth(false, new byte[SharedSecret.NONCE_LENGTH],
				SETTINGS.maxFrameLength(), SETTINGS.heartbeatMillis(), new DialledEndpoint("embedded:0", "")));
	}

	@Test
	void engineFrameBeforeThePeersAuthClosesTheConnection() {
		open(true);
		inbound(KVFrameCodec.encodePreface(UnpooledByteBufAllocator.DEFAULT, KVMessage.PROTOCOL_VERSION));
		inbound(KVFrameCodec.encode(UnpooledByteBufAllocator.DEFAULT, new KVMessage.Abort(3, "x"), 4096));
		assertThat(channel.isOpen()).isFalse();
		assertThat(accepted.get()).isNull();
		assertThat(handler.events).isEmpty();
		assertThat(connection.handshakeFuture().cause()).isInstanceOf(ProtocolException.class)
				.hasMessageContaining("handshake incomplete: Abort arrived before the peer's AUTH frame");
	}

	@Test
	void secondAuthIsRejected() {
		open(false);
		handshake();
		inbound(KVFrameCodec.encodeAuth(UnpooledByteBufAllocator.DEFAULT, noSecret()));
		assertThat(channel.isOpen()).isFalse();
		channel.close();
		assertThat(handler.closeReasons).containsExactly("unexpected second AUTH frame");
	}

	@Test
	void proofWithoutASecretIsRejected() {
		open(false);
		handshake();
		inbound(KVFrameCodec.encodeAuthProof(UnpooledByteBufAllocator.DEFAULT, new byte[SharedSecret.PROOF_LENGTH]));
		assertThat(channel.isOpen()).isFalse();
		channel.close();
		assertThat(handler.closeReasons)
				.containsExactly("unexpected AUTH_PROOF frame (no shared secret is configured here)");
	}

	@Test
	void secretHandshakeProvesOnlyAfterTheConnectingSidesProofVerifiedAndThenCompletes() {
		SharedSecret secret = SharedSecret.of("k".getBytes(StandardCharsets.UTF_8));
		KVFrameCodec.Auth own = open(true, SETTINGS.withSharedSecret(secret).withAdvertisedAddresses(NAMES));
		assertThat(own.hasSecret()).isTrue();
		assertThat(own.nonce()).isNotEqualTo(new byte[SharedSecret.NONCE_LENGTH]);
		assertThat(own.dialled()).isEqualTo(DialledEndpoint.NONE);

		byte[] peerNonce = secret.newNonce();
		inbound(KVFrameCodec.encodePreface(UnpooledByteBufAllocator.DEFAULT, KVMessage.PROTOCOL_VERSION));
		inbound(KVFrameCodec.encodeAuth(UnpooledByteBufAllocator.DEFAULT,
				new KVFrameCodec.Auth(true, peerNonce, 16 << 20, DIALLED)));
		// Nothing proven yet: the peer has not proven the secret.
		channel.runPendingTasks();
		assertThat((Object) channel.readOutbound()).isNull();
		assertThat(connection.handshakeFuture().isDone()).isFalse();

		byte[] peerProof = secret.proof(SharedSecret.Role.CONNECTING, own.nonce(), peerNonce, DIALLED);
		inbound(KVFrameCodec.encodeAuthProof(UnpooledByteBufAllocator.DEFAULT, peerProof));
		ByteBuf proofFrame = readOutbound();
		try {
			proofFrame.skipBytes(KVFrameCodec.FRAME_PREFIX_LENGTH);
			byte[] proof = KVFrameCodec.decodeAuthProof(proofFrame);
			assertThat(secret.verify(SharedSecret.Role.ACCEPTING, proof, peerNonce, own.nonce(), DIALLED)).isTrue();
		}
		finally {
			proofFrame.release();
		}
		assertThat(connection.handshakeFuture().isSuccess()).isTrue();
		assertThat(accepted.get()).isSameAs(connection);
	}

	@Test
	void secretHandshakeRejectsAProofForAnotherNonce() {
		SharedSecret secret = SharedSecret.of(new byte[] { 1, 2, 3 });
		KVFrameCodec.Auth own = open(true, SETTINGS.withSharedSecret(secret).withAdvertisedAddresses(NAMES));
		byte[] peerNonce = secret.newNonce();
		inbound(KVFrameCodec.encodePreface(UnpooledByteBufAllocator.DEFAULT, KVMessage.PROTOCOL_VERSION));
		inbound(KVFrameCodec.encodeAuth(UnpooledByteBufAllocator.DEFAULT,
				new KVFrameCodec.Auth(true, peerNonce, 16 << 20, DIALLED)));
		// A proof recorded on another connection: right secret, wrong nonce.
		byte[] replayed = secret.proof(SharedSecret.Role.CONNECTING, secret.newNonce(), peerNonce, DIALLED);
		inbound(KVFrameCodec.encodeAuthProof(UnpooledByteBufAllocator.DEFAULT, replayed));
		assertThat(channel.isOpen()).isFalse();
		assertThat(accepted.get()).isNull();
		assertThat(own.hasSecret()).isTrue();
		assertThat(connection.handshakeFuture().cause()).isInstanceOf(ProtocolException.class)
				.hasMessageContaining("shared secret mismatch: the peer's proof does not verify");
	}

	@Test
	void secretSideRejectsAPeerWithoutOneAndEngineFramesBeforeTheProof() {
		SharedSecret secret = SharedSecret.of(new byte[] { 9 });
		open(false, SETTINGS.withSharedSecret(secret));
		inbound(KVFrameCodec.encodePreface(UnpooledByteBufAllocator.DEFAULT, KVMessage.PROTOCOL_VERSION));
		inbound(KVFrameCodec.encodeAuth(UnpooledByteBufAllocator.DEFAULT, noSecret()));
		assertThat(channel.isOpen()).isFalse();
		assertThat(connection.handshakeFuture().cause()).isInstanceOf(ProtocolException.class)
				.hasMessageContaining("peer did not prove the shared secret: it has none configured");

		open(false, SETTINGS.withSharedSecret(secret));
		inbound(KVFrameCodec.encodePreface(UnpooledByteBufAllocator.DEFAULT, KVMessage.PROTOCOL_VERSION));
		inbound(KVFrameCodec.encodeAuth(UnpooledByteBufAllocator.DEFAULT,
				new KVFrameCodec.Auth(true, secret.newNonce(), 16 << 20)));
		readOutbound().release();
		inbound(KVFrameCodec.encode(UnpooledByteBufAllocator.DEFAULT, new KVMessage.AbortAck(1), 4096));
		assertThat(channel.isOpen()).isFalse();
		assertThat(handler.events).isEmpty();
		assertThat(connection.handshakeFuture().cause())
				.hasMessageContaining("peer did not prove the shared secret: AbortAck arrived before the handshake "
						+ "completed");
	}

	@Test
	void sideWithoutASecretRejectsAPeerThatHasOne() {
		open(false);
		inbound(KVFrameCodec.encodePreface(UnpooledByteBufAllocator.DEFAULT, KVMessage.PROTOCOL_VERSION));
		inbound(KVFrameCodec.encodeAuth(UnpooledByteBufAllocator.DEFAULT,
				new KVFrameCodec.Auth(true, new byte[SharedSecret.NONCE_LENGTH], 16 << 20)));
		assertThat(channel.isOpen()).isFalse();
		assertThat(connection.handshakeFuture().cause()).isInstanceOf(ProtocolException.class)
				.hasMessageContaining("shared secret mismatch: the peer requires a shared secret and none is "
						+ "configured here");
	}

	@Test
	void handshakeThatDoesNotCompleteInTimeIsClosed() {
		open(true);
		inbound(KVFrameCodec.encodePreface(UnpooledByteBufAllocator.DEFAULT, KVMessage.PROTOCOL_VERSION));
		// Heartbeats keep the reader busy but do not complete the handshake.
		long step = SETTINGS.heartbeatInterval().toMillis() / 2;
		long elapsed = 0;
		while (channel.isOpen() && elapsed < 2 * SETTINGS.handshakeTimeout().toMillis()) {
			inbound(KVFrameCodec.encodeHeartbeat(UnpooledByteBufAllocator.DEFAULT));
			channel.advanceTimeBy(step, TimeUnit.MILLISECONDS);
			elapsed += step;
			channel.runScheduledPendingTasks();
			channel.runPendingTasks();
		}
		assertThat(channel.isOpen()).isFalse();
		assertThat(elapsed).isEqualTo(SETTINGS.handshakeTimeout().toMillis());
		assertThat(accepted.get()).isNull();
		assertThat(connection.closeReason()).isEqualTo("handshake not completed within 7 s");
		assertThat(connection.handshakeFuture().cause()).hasMessageEndingWith("handshake not completed within 7 s");
	}

	@Test
	void sentMessagesAreWrittenInOrderAndTheirResultsComplete() {
		open(false);
		handshake();
		List<KVMessage> sent = Samples.everyMessage();
		List<reactor.core.publisher.Mono<Void>> results = new ArrayList<>();
		for (KVMessage m : sent) {
			results.add(Sent.now(connection, m));
		}
		ByteBuf out = drainOutbound();
		try {
			assertThat(decodeFrames(out)).containsExactlyElementsOf(sent);
		}
		finally {
			out.release();
		}
		for (var r : results) {
			StepVerifier.create(r).expectComplete().verify(TIMEOUT);
		}
	}

	@Test
	void messageTooLargeForTheFrameLimitFailsItsResultOnly() {
		open(false);
		handshake();
		var big = Sent.now(connection, new KVMessage.TransferRequest(1, new int[2000], 0, new int[0], 1, false));
		var small = Sent.now(connection, new KVMessage.AbortAck(1));
		ByteBuf out = drainOutbound();
		try {
			assertThat(decodeFrames(out)).containsExactly(new KVMessage.AbortAck(1));
		}
		finally {
			out.release();
		}
		StepVerifier.create(big).expectErrorMessage("cannot send TransferRequest: body of 8039 bytes exceeds "
				+ "maxFrameLength 4096").verify(TIMEOUT);
		StepVerifier.create(small).expectComplete().verify(TIMEOUT);
	}

	@Test
	void dataBlockBehindAClosedGateIsDroppedAndSoIsAMessageBehindIt() {
		open(false);
		handshake();
		MemoryRegion src = Samples.randomRegion(64, 1);
		connection.send(new DataBlock(new DataHeader(7, RegionKind.KV, 0, 0, 64, 64, 1), src.address(), 64,
				() -> false));
		var success = Sent.now(connection, new KVMessage.Status(7, KVPoll.SUCCESS, 0, "", 64, KVMessage.NO_CHECKSUM),
				() -> false);
		connection.send(new DataBlock(new DataHeader(8, RegionKind.KV, 0, 0, 64, 64, 1), src.address(), 64));
		ByteBuf out = drainOutbound();
		try {
			assertThat(out.readableBytes()).isEqualTo(KVFrameCodec.FRAME_PREFIX_LENGTH + KVFrameCodec.DATA_HEADER_LENGTH
					+ 64);
			out.skipBytes(KVFrameCodec.FRAME_PREFIX_LENGTH);
			assertThat(KVFrameCodec.decodeDataHeader(out).room()).isEqualTo(8);
			assertThat(ByteBufUtil.getBytes(out)).isEqualTo(Samples.read(src, 0, 64));
		}
		finally {
			out.release();
		}
		assertThat(connection.blocksDropped()).isEqualTo(1);
		assertThat(connection.queuedBytes()).isZero();
		StepVerifier.create(success)
				.expectErrorSatisfies(e -> assertThat(e).hasMessageContaining("stopped before it was written"))
				.verify(TIMEOUT);
	}

	@Test
	void aHighPriorityRoomsDataAndSuccessGoAheadOfQueuedNormalRoomsEachInItsOrder() {
		open(false);
		handshake();
		MemoryRegion src = Samples.randomRegion(64, 4);
		SendGate high = new SendGate() {
			@Override
			public boolean isOpen() {
				return true;
			}

			@Override
			public RoomPriority priority() {
				return RoomPriority.HIGH;
			}
		};
		SendGate normal = () -> true;
		connection.send(new DataBlock(new DataHeader(7, RegionKind.KV, 0, 0, 64, 64, 1), src.address(), 64, normal));
		connection.send(new DataBlock(new DataHeader(7, RegionKind.KV, 0, 64, 64, 64, 1), src.address() + 64, 64,
				normal));
		Sent.now(connection, new KVMessage.Status(7, KVPoll.SUCCESS, 0, "", 128, KVMessage.NO_CHECKSUM), normal);
		connection.send(new DataBlock(new DataHeader(9, RegionKind.KV, 0, 128, 64, 64, 1), src.address() + 128, 64,
				high));
		connection.send(new DataBlock(new DataHeader(9, RegionKind.KV, 0, 192, 64, 64, 1), src.address() + 192, 64,
				high));
		Sent.now(connection, new KVMessage.Status(9, KVPoll.SUCCESS, 0, "", 128, KVMessage.NO_CHECKSUM), high);
		ByteBuf out = drainOutbound();
		List<String> order = new ArrayList<>();
		try {
			while (out.isReadable()) {
				int length = out.readInt();
				int type = out.readUnsignedByte();
				ByteBuf body = out.readSlice(length - 1);
				if (type == KVFrameCodec.TYPE_DATA) {
					DataHeader h = KVFrameCodec.decodeDataHeader(body);
					order.add("data " + h.room() + " @" + h.dstOffset());
				}
				else {
					order.add("status " + ((KVMessage.Status) KVFrameCodec.decode(type, body)).room());
				}
			}
		}
		finally {
			out.release();
		}
		assertThat(order).containsExactly("data 9 @128", "data 9 @192", "status 9", "data 7 @0", "data 7 @64",
				"status 7");
	}

	@Test
	void malformedInputClosesWithTheReasonAndOnCloseIsCalledOnce() {
		open(false);
		handshake();
		inbound(Unpooled.copiedBuffer(new byte[] { 0, 0, 0, 1, 0x55 }));
		assertThat(channel.isOpen()).isFalse();
		channel.runPendingTasks();
		channel.close();
		assertThat(handler.closeReasons).containsExactly("unknown frame type 0x55 (length 1)");
		assertThat(connection.isActive()).isFalse();
	}

	@Test
	void closeWritesQueuedMessagesDropsQueuedDataAndThenCloses() {
		open(false);
		handshake();
		MemoryRegion src = Samples.randomRegion(64, 2);
		var before = Sent.now(connection, new KVMessage.Reject("incompatible page size"));
		connection.send(new DataBlock(new DataHeader(1, RegionKind.KV, 0, 0, 64, 64, 1), src.address(), 64));
		connection.close("handshake rejected");
		var after = Sent.now(connection, new KVMessage.AbortAck(1));
		ByteBuf out = drainOutbound();
		try {
			assertThat(decodeFrames(out)).containsExactly(new KVMessage.Reject("incompatible page size"));
		}
		finally {
			out.release();
		}
		assertThat(channel.isOpen()).isFalse();
		StepVerifier.create(before).expectComplete().verify(TIMEOUT);
		StepVerifier.create(after)
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(KVFerryException.class)
						.hasMessageContaining("closed before the message was queued: handshake rejected"))
				.verify(TIMEOUT);
		assertThat(handler.closeReasons).containsExactly("handshake rejected");
		assertThat(connection.queuedBytes()).isZero();
	}

	@Test
	void closeDropsASuccessWhoseDataWasDroppedWithIt() {
		open(true);
		handshake();
		setWritable(false);
		// A room's data and the Success that reports it, queued behind a slow socket when the connection closes.
		MemoryRegion src = Samples.randomRegion(4096, 5);
		connection.send(new DataBlock(new DataHeader(7, RegionKind.KV, 0, 0, 4096, 0, 1), src.address(), 0));
		// Behind the room's gate, as the engine sends a Success: still open, the room did not stop.
		var success = Sent.now(connection, new KVMessage.Status(7, KVPoll.SUCCESS, 0, "", 4096, KVMessage.NO_CHECKSUM),
				() -> true);
		var failure = Sent.now(connection, new KVMessage.Status(8, KVPoll.FAILED, 0, "gone"));
		connection.close("transport disposed");
		setWritable(true);
		ByteBuf out = drainOutbound();
		try {
			assertThat(decodeFrames(out)).as("no data frame, no Success: only the failure goes out")
					.containsExactly(new KVMessage.Status(8, KVPoll.FAILED, 0, "gone"));
		}
		finally {
			out.release();
		}
		StepVerifier.create(success)
				.expectErrorSatisfies(e -> assertThat(e).hasMessageContaining("queued data was dropped"))
				.verify(TIMEOUT);
		StepVerifier.create(failure).expectComplete().verify(TIMEOUT);
	}

	@Test
	void whatIsSentIsCutToThePeersFrameLimit() {
		open(false);
		inbound(KVFrameCodec.encodePreface(UnpooledByteBufAllocator.DEFAULT, KVMessage.PROTOCOL_VERSION));
		inbound(KVFrameCodec.encodeAuth(UnpooledByteBufAllocator.DEFAULT,
				new KVFrameCodec.Auth(false, new byte[SharedSecret.NONCE_LENGTH], TransportSettings.MIN_FRAME_LENGTH)));
		MemoryRegion src = Samples.randomRegion(3000, 9);
		connection.send(new DataBlock(new DataHeader(1, RegionKind.KV, 0, 0, 3000, 0, 1), src.address(), 0));
		var tooLarge = Sent.now(connection, new KVMessage.Reject("x".repeat(2000)));
		ByteBuf out = drainOutbound();
		List<Long> payloads = new ArrayList<>();
		try {
			while (out.isReadable()) {
				out.skipBytes(KVFrameCodec.FRAME_PREFIX_LENGTH);
				DataHeader frame = KVFrameCodec.decodeDataHeader(out);
				payloads.add(frame.payloadLength());
				out.skipBytes((int) frame.payloadLength());
			}
		}
		finally {
			out.release();
		}
		assertThat(payloads).as("this side accepts 4096, the peer 1024").containsExactly(1024L, 1024L, 952L);
		StepVerifier.create(tooLarge)
				.expectErrorSatisfies(e -> assertThat(e).hasMessageContaining("exceeds maxFrameLength 1024"))
				.verify(TIMEOUT);
	}

	@Test
	void messagesPendingWhenTheChannelClosesFailTheirResults() {
		open(false);
		handshake();
		setWritable(false);
		var pending = Sent.now(connection, new KVMessage.AbortAck(1));
		channel.runPendingTasks();
		assertThat(channel.<Object>readOutbound()).isNull();
		channel.close();
		channel.runPendingTasks();
		StepVerifier.create(pending)
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(KVFerryException.class)
						.hasMessageContaining("closed before the message was written"))
				.verify(TIMEOUT);
		assertThat(handler.closeReasons).hasSize(1);
		assertThat(handler.closeReasons.peek()).startsWith("connection closed by peer");
	}

	@Test
	void nothingIsHandedToNettyWhileUnwritableAndTheQueueResumesInOrder() {
		open(false);
		handshake();
		MemoryRegion src = Samples.randomRegion(64, 4);
		setWritable(false);
		var first = Sent.now(connection, new KVMessage.Abort(1, "a"));
		connection.send(new DataBlock(new DataHeader(1, RegionKind.KV, 0, 0, 64, 64, 1), src.address(), 64));
		var last = Sent.now(connection, new KVMessage.AbortAck(1));
		channel.runPendingTasks();
		assertThat(channel.<Object>readOutbound()).isNull();
		assertThat(connection.queuedBytes()).isEqualTo(64);

		setWritable(true);
		ByteBuf out = drainOutbound();
		try {
			int length = out.readInt();
			assertThat(KVFrameCodec.decode(out.readUnsignedByte(), out.readSlice(length - 1)))
					.isEqualTo(new KVMessage.Abort(1, "a"));
			out.skipBytes(KVFrameCodec.FRAME_PREFIX_LENGTH);
			assertThat(KVFrameCodec.decodeDataHeader(out).room()).isEqualTo(1);
			assertThat(ByteBufUtil.getBytes(out.readSlice(64))).isEqualTo(Samples.read(src, 0, 64));
			assertThat(decodeFrames(out)).containsExactly(new KVMessage.AbortAck(1));
		}
		finally {
			out.release();
		}
		StepVerifier.create(first.then(last)).expectComplete().verify(TIMEOUT);
		assertThat(connection.queuedBytes()).isZero();
	}

	private void setWritable(boolean writable) {
		channel.unsafe().outboundBuffer().setUserDefinedWritability(1, writable);
		channel.runPendingTasks();
	}

	@Test
	void negativeHeaderFieldIsRefusedAtTheCaller() {
		open(false);
		handshake();
		assertThatThrownBy(() -> connection.send(new DataBlock(new DataHeader(1, RegionKind.KV, 0, 0, -1, 0, 1),
				1, 0))).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no negative field");
	}

	@Test
	void idleWriterSendsAHeartbeatAndASilentPeerIsClosedAfterTwoIntervals() {
		open(false);
		handshake();
		channel.advanceTimeBy(1100, TimeUnit.MILLISECONDS);
		channel.runScheduledPendingTasks();
		ByteBuf heartbeat = readOutbound();
		try {
			assertThat(ByteBufUtil.hexDump(heartbeat)).isEqualTo("0000000110");
		}
		finally {
			heartbeat.release();
		}
		assertThat(channel.isOpen()).isTrue();
		channel.advanceTimeBy(1000, TimeUnit.MILLISECONDS);
		channel.runScheduledPendingTasks();
		channel.runPendingTasks();
		assertThat(channel.isOpen()).isFalse();
		assertThat(handler.closeReasons).containsExactly("no heartbeat from embedded:0 for 2 intervals (2 s)");
	}

	@Test
	void heartbeatsFromThePeerKeepTheConnectionOpen() {
		open(false);
		handshake();
		for (int i = 0; i < 6; i++) {
			channel.advanceTimeBy(900, TimeUnit.MILLISECONDS);
			inbound(KVFrameCodec.encodeHeartbeat(UnpooledByteBufAllocator.DEFAULT));
			channel.runScheduledPendingTasks();
		}
		assertThat(channel.isOpen()).isTrue();
		assertThat(connection.heartbeatsReceived()).isEqualTo(6);
	}

	@Test
	void stridedBlockIsGatheredAndScatteredByteExact() {
		open(false);
		handshake();
		// 10 chunks of 100 bytes every 256 bytes on the sender, every 300 bytes on the receiver; 4096-byte frames.
		MemoryRegion src = Samples.randomRegion(2560, 3);
		DataHeader header = new DataHeader(1, RegionKind.KV, 0, 50, 100, 300, 10);
		connection.send(new DataBlock(header, src.address() + 7, 256));
		ByteBuf out = drainOutbound();
		MemoryRegion dst = MemoryRegion.allocate(4096, 1);
		AtomicLong received = new AtomicLong();
		try {
			while (out.isReadable()) {
				out.skipBytes(KVFrameCodec.FRAME_PREFIX_LENGTH);
				DataHeader frame = KVFrameCodec.decodeDataHeader(out);
				RegionSink sink = new RegionSink(dst, frame, received, () -> { });
				sink.write(out.readSlice((int) frame.payloadLength()));
				sink.complete();
			}
		}
		finally {
			out.release();
		}
		assertThat(received.get()).isEqualTo(1000);
		for (int i = 0; i < 10; i++) {
			assertThat(Samples.read(dst, 50 + i * 300L, 100)).isEqualTo(Samples.read(src, 7 + i * 256L, 100));
		}
	}
}
