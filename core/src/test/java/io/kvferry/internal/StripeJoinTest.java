package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.Random;

import io.kvferry.HostPort;
import io.kvferry.KVManagerSpec;
import io.kvferry.ParallelLayout;
import io.kvferry.PrefillKVManager;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.PeerLayout;
import io.kvferry.test.InMemoryBootstrap;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.test.RecordingHandler;
import io.kvferry.transport.local.InMemoryKVTransport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A prefill rank admits a further stripe only with the token of a session that waits for it and a free index in its
 * range; everything a peer controls in a Hello or a Join is checked, and a refusal names the field and the rule.
 */
class StripeJoinTest {

	private static final Duration T = Duration.ofSeconds(10);
	private static final ModelShape SHAPE = new ModelShape(2, 2, 16, 2, 4, false, 0, 64, 0);

	private final InMemoryKVTransport transport = InMemoryKVTransport.create();
	private final RankMemory decodeMem = RankMemory.decode(SHAPE, ParallelLayout.SINGLE, 8, 2, 2);
	private PrefillKVManager prefill;

	@BeforeEach
	void start() {
		prefill = KVManagerSpec.prefill().kvArgs(RankMemory.prefill(SHAPE, ParallelLayout.SINGLE, 8, 2, 2).kvArgs())
				.transport(transport).bootstrapClient(new InMemoryBootstrap())
				.bootstrapAddress(new HostPort("127.0.0.1", 8998)).bindAddress(new HostPort("127.0.0.1", 0))
				.startNow();
	}

	@AfterEach
	void stop() {
		prefill.disposeNow(T);
	}

	private RecordingHandler connect() {
		RecordingHandler h = new RecordingHandler();
		h.connection = transport.connect(prefill.endpoint(), h).block(T);
		return h;
	}

	private KVMessage.Hello hello(int stripes) {
		return new KVMessage.Hello(KVMessage.PROTOCOL_VERSION, PeerLayout.of(decodeMem.kvArgs(), ParallelLayout.SINGLE),
				false, stripes);
	}

	/** @return the token of a fresh session of {@code stripes} stripes, its stripe 0 in {@code control[0]} */
	private long session(int stripes, RecordingHandler[] control) throws InterruptedException {
		RecordingHandler c = connect();
		c.connection.send(hello(stripes));
		KVMessage ack = c.nextMessage(T);
		assertThat(ack).isInstanceOf(KVMessage.HelloAck.class);
		control[0] = c;
		return ((KVMessage.HelloAck) ack).token();
	}

	/** Sends {@code join} on a new connection; returns the reason it was refused with, after the connection closed. */
	private String refused(KVMessage.Join join) throws InterruptedException {
		RecordingHandler h = connect();
		h.connection.send(join);
		KVMessage m = h.nextMessage(T);
		assertThat(m).as("answer to %s", join).isInstanceOf(KVMessage.Reject.class);
		h.awaitClose(T);
		return ((KVMessage.Reject) m).reason();
	}

	@Test
	void aHelloAskingForStripesOutOfRangeIsRejectedNamingTheLimit() throws InterruptedException {
		for (int stripes : new int[] { 0, -1, 9, Integer.MAX_VALUE, Integer.MIN_VALUE }) {
			RecordingHandler c = connect();
			c.connection.send(hello(stripes));
			KVMessage m = c.nextMessage(T);
			assertThat(m).isInstanceOf(KVMessage.Reject.class);
			assertThat(((KVMessage.Reject) m).reason()).contains("stripes : " + stripes + " (expected: 1..8");
			c.awaitClose(T);
		}
	}

	@Test
	void aHelloOfAnotherProtocolVersionIsRejectedNamingBoth() throws InterruptedException {
		RecordingHandler c = connect();
		c.connection.send(new KVMessage.Hello(KVMessage.PROTOCOL_VERSION - 1, PeerLayout.of(decodeMem.kvArgs(),
				ParallelLayout.SINGLE), false, 1));
		KVMessage m = c.nextMessage(T);
		assertThat(m).isInstanceOf(KVMessage.Reject.class);
		assertThat(((KVMessage.Reject) m).reason()).contains("protocol version mismatch: prefill "
				+ KVMessage.PROTOCOL_VERSION + ", decode " + (KVMessage.PROTOCOL_VERSION - 1));
		c.awaitClose(T);
	}

	@Test
	void oneStripeGetsNoTokenAndNothingCanJoinIt() throws InterruptedException {
		RecordingHandler[] control = new RecordingHandler[1];
		assertThat(session(1, control)).isZero();
		assertThat(refused(new KVMessage.Join(0, 1))).contains("unknown session token");
		assertThat(control[0].connection.isActive()).isTrue();
	}

	@Test
	void aJoinWithABadTokenOrIndexIsRefusedNamingWhy() throws InterruptedException {
		RecordingHandler[] control = new RecordingHandler[1];
		long token = session(3, control);
		assertThat(token).isNotZero();
		assertThat(refused(new KVMessage.Join(token ^ 1, 1))).contains("unknown session token");
		assertThat(refused(new KVMessage.Join(token, 0))).contains("stripe index 0 (expected: 1..2");
		assertThat(refused(new KVMessage.Join(token, 3))).contains("stripe index 3 (expected: 1..2");
		assertThat(refused(new KVMessage.Join(token, -7))).contains("stripe index -7");

		RecordingHandler one = connect();
		one.connection.send(new KVMessage.Join(token, 1));
		assertThat(one.nextMessage(T)).isEqualTo(new KVMessage.Joined(1));
		assertThat(refused(new KVMessage.Join(token, 1))).contains("stripe 1 already joined");

		// Not all stripes joined yet: a transfer request on stripe 0 is a protocol error.
		control[0].connection.send(new KVMessage.TransferRequest(5, new int[] { 1 }, -1, new int[0], 1, false));
		assertThat(control[0].awaitClose(T)).contains("before its 3 stripes joined");
		// The session is gone with its stripe 0, and the stripe that joined it closed with it.
		assertThat(one.awaitClose(T)).contains("closed");
		assertThat(refused(new KVMessage.Join(token, 2))).contains("unknown session token");
	}

	@Test
	void aCompleteSessionTakesNoMoreJoinsAndItsStripesTakeNoControlMessages() throws InterruptedException {
		RecordingHandler[] control = new RecordingHandler[1];
		long token = session(2, control);
		RecordingHandler one = connect();
		one.connection.send(new KVMessage.Join(token, 1));
		assertThat(one.nextMessage(T)).isEqualTo(new KVMessage.Joined(1));
		assertThat(refused(new KVMessage.Join(token, 1))).contains("unknown session token");
		one.connection.send(new KVMessage.Abort(3, "x"));
		assertThat(one.awaitClose(T)).contains("unexpected Abort from decode on stripe 1");
		// Any stripe closing closes the session.
		assertThat(control[0].awaitClose(T)).contains("another stripe");
	}

	@Test
	void randomJoinsNeverAttachToASession() throws InterruptedException {
		RecordingHandler[] control = new RecordingHandler[1];
		long token = session(2, control);
		Random random = new Random(42);
		for (int i = 0; i < 50; i++) {
			long t = random.nextLong();
			int stripe = random.nextInt(4) == 0 ? random.nextInt() : 1;
			String reason = refused(new KVMessage.Join(t == token ? t + 1 : t, stripe));
			assertThat(reason).contains("unknown session token");
		}
		for (int i = 0; i < 50; i++) {
			int stripe = random.nextInt();
			if (stripe == 1) {
				continue;
			}
			assertThat(refused(new KVMessage.Join(token, stripe))).contains("stripe index " + stripe);
		}
		// The session still waits for its real stripe 1.
		RecordingHandler one = connect();
		one.connection.send(new KVMessage.Join(token, 1));
		assertThat(one.nextMessage(T)).isEqualTo(new KVMessage.Joined(1));
		assertThat(control[0].connection.isActive()).isTrue();
	}

	@Test
	void somethingElseThanHelloOrJoinFirstClosesTheConnection() throws InterruptedException {
		RecordingHandler h = connect();
		h.connection.send(new KVMessage.Fence(1, 0, KVMessage.NO_CHECKSUM));
		assertThat(h.awaitClose(T)).contains("decode sent Fence before the handshake");
		KVConnection unused = h.connection;
		assertThat(unused.isActive()).isFalse();
	}
}
