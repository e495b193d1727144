package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import io.kvferry.DecodeKVManager;
import io.kvferry.FailureCause;
import io.kvferry.HostPort;
import io.kvferry.KVManager;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.KVTransferException;
import io.kvferry.PrefillKVManager;
import io.kvferry.TensorArena;
import io.kvferry.TensorArena.Tensor;
import io.kvferry.TensorPlacement;
import io.kvferry.test.InMemoryBootstrap;
import io.kvferry.transport.local.InMemoryKVTransport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;

/**
 * A room of named tensors through both managers: decode checks the manifest the room carried before Success, so a
 * receiver that placed other tensors (here the same chunk count, one size off) fails the room typed,
 * {@link FailureCause#MISMATCH}, naming the first tensor that differs, although every byte landed; and an engine's own
 * check fails a room the same way.
 */
class TensorRoomTest {

	private static final Duration T = Duration.ofSeconds(10);
	private static final HostPort BOOTSTRAP = new HostPort("127.0.0.1", 8998);
	private static final int CHUNK = 4096;
	private static final List<Tensor> SENT = List.of(new Tensor("image_embeds", 3 * CHUNK + 100),
			new Tensor("image_grid_thw", 24), new Tensor("audio_embeds", 2 * CHUNK));

	private final InMemoryKVTransport transport = InMemoryKVTransport.create();
	private final InMemoryBootstrap bootstrap = new InMemoryBootstrap();
	private final List<KVManager> managers = new ArrayList<>();
	private final TensorArena encoderArena = TensorArena.allocate(16, CHUNK, 4);
	private final TensorArena prefillArena = TensorArena.allocate(16, CHUNK, 4);

	@AfterEach
	void close() {
		managers.forEach(m -> m.disposeNow(T));
	}

	@Test
	void aRoomWhoseManifestMatchesSucceedsWithEveryByte() {
		TensorPlacement in = prefillArena.place(SENT, new int[] { 9, 2, 14, 5, 11, 0, 7 }, 1);
		KVReceiver receiver = send(in, 1);

		StepVerifier.create(receiver.completion()).expectComplete().verify(T);
		for (Tensor t : SENT) {
			assertThat(read(in, t)).as(t.name()).isEqualTo(pattern(t));
		}
	}

	@Test
	void aRoomWhoseManifestDiffersFailsTypedNamingTheFirstDifferingTensor() {
		// Same chunk count: the ledger alone would call the room complete.
		List<Tensor> expected = List.of(SENT.get(0), new Tensor("image_grid_thw", 16), SENT.get(2));
		TensorPlacement in = prefillArena.place(expected, new int[] { 9, 2, 14, 5, 11, 0, 7 }, 1);
		KVReceiver receiver = send(in, 2);

		StepVerifier.create(receiver.completion()).expectErrorSatisfies(e -> {
			assertThat(e).isInstanceOf(KVTransferException.class);
			KVTransferException x = (KVTransferException) e;
			assertThat(x.failureCause()).isEqualTo(FailureCause.MISMATCH);
			assertThat(x.reason()).contains("room 2 landed whole")
					.endsWith("tensor 1 'image_grid_thw' (16 bytes) differs from the sender's tensor 1 (another name "
							+ "or size)");
			assertThat(x.isFromAnotherRank()).isFalse();
		}).verify(T);
		assertThat(receiver.poll()).isEqualTo(KVPoll.FAILED);
	}

	@Test
	void anEnginesCheckThatThrowsFailsTheRoomAsAMismatch() {
		TensorPlacement in = prefillArena.place(SENT, new int[] { 9, 2, 14, 5, 11, 0, 7 }, 1);
		KVReceiver receiver = decode().receiver(BOOTSTRAP, 3);
		receiver.verify(() -> {
			throw new IllegalStateException("no such request");
		});
		receiver.sendMetadata(in.chunks(), in.row(), new int[0]);
		sendFromEncoder(3);

		StepVerifier.create(receiver.completion()).expectErrorSatisfies(e -> {
			KVTransferException x = (KVTransferException) e;
			assertThat(x.failureCause()).isEqualTo(FailureCause.MISMATCH);
			assertThat(x.reason()).endsWith("the engine's check threw java.lang.IllegalStateException: no such request");
		}).verify(T);
	}

	private DecodeKVManager decodeManager;
	private PrefillKVManager prefillManager;

	private DecodeKVManager decode() {
		if (decodeManager == null) {
			prefillManager = KVManagerSpec.prefill().kvArgs(encoderArena.kvArgs()).transport(transport)
					.bootstrapClient(bootstrap).bootstrapAddress(BOOTSTRAP).bindAddress(new HostPort("127.0.0.1", 0))
					.startNow(T);
			managers.add(prefillManager);
			decodeManager = KVManagerSpec.decode().kvArgs(prefillArena.kvArgs()).transport(transport)
					.bootstrapClient(bootstrap).startNow(T);
			managers.add(decodeManager);
		}
		return decodeManager;
	}

	private KVReceiver send(TensorPlacement in, long room) {
		KVReceiver receiver = decode().receiver(BOOTSTRAP, room);
		in.receive(receiver);
		sendFromEncoder(room);
		return receiver;
	}

	private void sendFromEncoder(long room) {
		TensorPlacement out = encoderArena.place(SENT, new int[] { 0, 1, 2, 3, 4, 5, 6 }, 0);
		for (Tensor t : SENT) {
			out.write(t.name(), ByteBuffer.wrap(pattern(t)));
		}
		out.writeManifest();
		KVSender sender = prefillManager.sender(room);
		sender.init(out.chunks().length, out.row());
		sender.send(out.chunks(), new int[0]);
		StepVerifier.create(sender.completion()).expectComplete().verify(T);
	}

	private static byte[] pattern(Tensor t) {
		byte[] b = new byte[(int) t.bytes()];
		for (int i = 0; i < b.length; i++) {
			b[i] = (byte) (i * 31 + t.name().length());
		}
		return b;
	}

	private static byte[] read(TensorPlacement p, Tensor t) {
		ByteBuffer b = ByteBuffer.allocateDirect((int) t.bytes());
		p.read(t.name(), b);
		byte[] out = new byte[b.remaining()];
		b.get(out);
		return out;
	}
}
