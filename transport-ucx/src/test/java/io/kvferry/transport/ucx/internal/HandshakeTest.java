package io.kvferry.transport.ucx.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.Arrays;
import java.util.Random;

import io.kvferry.ProtocolException;
import io.kvferry.spi.KVMessage;
import io.kvferry.transport.ucx.UcxDataPath;
import org.junit.jupiter.api.Test;

/**
 * The UCX handshake's codec, which reads what any process that reaches a listener's port sends: every step comes back
 * as written; every prefix, every bound crossed and every few-byte change of a hello either reads as a valid step or
 * fails with a {@link ProtocolException} naming the problem, never anything else.
 */
class HandshakeTest {

	private static final Handshake HELLO = new Handshake(0x0102030405060708L, new byte[] { 9, 8, 7 }, "tcp", "host-1",
			true, UcxDataPath.ONE_SIDED, 1500, filled(32, 3), "127.0.0.1:4000", filled(32, 4));

	@Test
	void everyStepComesBackAsWritten() throws Exception {
		Handshake hello = (Handshake) read(bytes(HELLO));
		assertThat(hello.connection()).isEqualTo(HELLO.connection());
		assertThat(hello.workerAddress()).isEqualTo(HELLO.workerAddress());
		assertThat(hello.tls()).isEqualTo("tcp");
		assertThat(hello.host()).isEqualTo("host-1");
		assertThat(hello.rdmaDevice()).isTrue();
		assertThat(hello.dataPath()).isEqualTo(UcxDataPath.ONE_SIDED);
		assertThat(hello.heartbeatMillis()).isEqualTo(1500);
		assertThat(hello.nonce()).isEqualTo(HELLO.nonce());
		assertThat(hello.reached()).isEqualTo("127.0.0.1:4000");
		assertThat(hello.proof()).isEqualTo(HELLO.proof());
		assertThat(hello.body()).as("what the proofs cover").isEqualTo(HELLO.body());

		ByteArrayOutputStream out = new ByteArrayOutputStream();
		Handshake.challenge(out, filled(32, 5));
		assertThat(((HandshakeStep.Challenge) read(out.toByteArray())).nonce()).isEqualTo(filled(32, 5));
		out.reset();
		Handshake.prove(out, filled(32, 6));
		assertThat(((HandshakeStep.Proof) read(out.toByteArray())).proof()).isEqualTo(filled(32, 6));
		out.reset();
		Handshake.refuse(out, "shared secret mismatch");
		assertThatThrownBy(() -> read(out.toByteArray())).isInstanceOf(ProtocolException.class)
				.hasMessage("UCX handshake refused by peer: shared secret mismatch");
	}

	@Test
	void theHelloIsItsFieldsInOrder() throws Exception {
		ByteArrayOutputStream expected = new ByteArrayOutputStream();
		DataOutputStream out = new DataOutputStream(expected);
		out.writeInt(0x4b564655);
		out.writeShort(2);
		out.writeInt(KVMessage.PROTOCOL_VERSION);
		out.writeByte(0);
		out.writeLong(0x0102030405060708L);
		out.writeInt(3);
		out.write(new byte[] { 9, 8, 7 });
		out.writeUTF("tcp");
		out.writeUTF("host-1");
		out.writeBoolean(true);
		out.writeByte(UcxDataPath.ONE_SIDED.ordinal());
		out.writeInt(1500);
		out.writeInt(32);
		out.write(filled(32, 3));
		out.writeUTF("127.0.0.1:4000");
		out.writeInt(32);
		out.write(filled(32, 4));
		assertThat(bytes(HELLO)).isEqualTo(expected.toByteArray());
	}

	@Test
	void everyPrefixFailsNamingTheEarlyClose() throws Exception {
		byte[] full = bytes(HELLO);
		for (int n = 0; n < full.length; n++) {
			byte[] prefix = Arrays.copyOf(full, n);
			assertThatThrownBy(() -> read(prefix)).as("cut at %d of %d", n, full.length)
					.isInstanceOf(ProtocolException.class)
					.hasMessageContaining("closed before the handshake completed");
		}
	}

	@Test
	void everyBoundIsCheckedBeforeAnythingIsAllocated() {
		int path = 4 + 2 + 4 + 1 + 8 + 4 + 3 + 5 + 8 + 1;
		expectRefused(set(bytes(HELLO), 0, 0x12345678), "not a kvferry UCX peer");
		expectRefused(setShort(bytes(HELLO), 4, 1), "it runs handshake 1");
		expectRefused(set(bytes(HELLO), 6, KVMessage.PROTOCOL_VERSION + 1), "run the same kvferry release");
		expectRefused(setByte(bytes(HELLO), 10, 9), "step 9 (expected: 0..3)");
		expectRefused(set(bytes(HELLO), 19, (1 << 16) + 1), "worker address of 65537 bytes (expected: 0..65536)");
		expectRefused(set(bytes(HELLO), 19, -1), "worker address of -1 bytes");
		expectRefused(setByte(bytes(HELLO), path, 3), "data path 3 (expected: 0..2)");
		expectRefused(set(bytes(HELLO), path + 1, 9), "heartbeat interval of 9 ms (expected: 10..600000)");
		expectRefused(set(bytes(HELLO), path + 1, 600_001), "heartbeat interval of 600001 ms");
		expectRefused(set(bytes(HELLO), path + 5, 31), "nonce of 31 bytes (expected: 0 or 32)");
		ByteArrayOutputStream challenge = new ByteArrayOutputStream();
		try {
			Handshake.challenge(challenge, new byte[31]);
		}
		catch (IOException e) {
			throw new AssertionError(e);
		}
		expectRefused(challenge.toByteArray(), "challenge nonce of 31 bytes (expected: 32)");
	}

	@Test
	void aFewChangedBytesReadAsAValidStepOrFailNamingTheProblem() throws Exception {
		byte[] full = bytes(HELLO);
		Random random = new Random(38);
		for (int i = 0; i < 5000; i++) {
			byte[] changed = full.clone();
			for (int k = 1 + random.nextInt(3); k > 0; k--) {
				changed[random.nextInt(changed.length)] = (byte) random.nextInt(256);
			}
			try {
				assertThat(read(changed)).isInstanceOf(HandshakeStep.class);
			}
			catch (ProtocolException e) {
				assertThat(e.getMessage()).startsWith("UCX handshake");
			}
		}
	}

	private static void expectRefused(byte[] bytes, String reason) {
		assertThatThrownBy(() -> read(bytes)).isInstanceOf(ProtocolException.class)
				.hasMessageStartingWith("UCX handshake with peer failed: ").hasMessageContaining(reason);
	}

	private static HandshakeStep read(byte[] bytes) throws IOException {
		return Handshake.read(new ByteArrayInputStream(bytes), "peer");
	}

	private static byte[] bytes(Handshake h) {
		ByteArrayOutputStream out = new ByteArrayOutputStream();
		try {
			h.write(out);
		}
		catch (IOException e) {
			throw new AssertionError(e);
		}
		return out.toByteArray();
	}

	private static byte[] set(byte[] b, int at, int value) {
		b[at] = (byte) (value >>> 24);
		b[at + 1] = (byte) (value >>> 16);
		b[at + 2] = (byte) (value >>> 8);
		b[at + 3] = (byte) value;
		return b;
	}

	private static byte[] setShort(byte[] b, int at, int value) {
		b[at] = (byte) (value >>> 8);
		b[at + 1] = (byte) value;
		return b;
	}

	private static byte[] setByte(byte[] b, int at, int value) {
		b[at] = (byte) value;
		return b;
	}

	private static byte[] filled(int n, int value) {
		byte[] b = new byte[n];
		Arrays.fill(b, (byte) value);
		return b;
	}
}
