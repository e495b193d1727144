package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;

import io.kvferry.DecodeKVManager;
import io.kvferry.DecodeSpec;
import io.kvferry.FailureCause;
import io.kvferry.HostPort;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.KVTransferException;
import io.kvferry.ParallelLayout;
import io.kvferry.PrefillKVManager;
import io.kvferry.RoomPath;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.test.InMemoryBootstrap;
import io.kvferry.transport.local.InMemoryKVTransport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;

/** In one JVM a room travels in memory, says so, and fails when decode requires a path memory is not. */
class InMemoryRoomPathTest {

	private static final Duration T = Duration.ofSeconds(10);
	private static final ModelShape SHAPE = new ModelShape(2, 2, 16, 2, 4, false, 0, 64, 0);
	private static final HostPort BOOTSTRAP = new HostPort("127.0.0.1", 8997);

	private final InMemoryBootstrap bootstrap = new InMemoryBootstrap();
	private final InMemoryKVTransport transport = InMemoryKVTransport.create();
	private final RankMemory prefillMem = RankMemory.prefill(SHAPE, ParallelLayout.SINGLE, 64, 8, 8);
	private final RankMemory decodeMem = RankMemory.decode(SHAPE, ParallelLayout.SINGLE, 64, 8, 8);
	private PrefillKVManager prefill;
	private DecodeKVManager decode;

	private void start(RoomPath.Requirement required) {
		prefill = KVManagerSpec.prefill().kvArgs(prefillMem.kvArgs()).transport(transport).bootstrapClient(bootstrap)
				.bootstrapAddress(BOOTSTRAP).bindAddress(new HostPort("127.0.0.1", 0)).startNow();
		decode = KVManagerSpec.decode().kvArgs(decodeMem.kvArgs()).transport(transport).bootstrapClient(bootstrap)
				.requirePath(required).startNow();
	}

	@AfterEach
	void close() {
		prefill.disposeNow(T);
		decode.disposeNow(T);
	}

	@Test
	void aRoomInOneJvmSaysInMemoryAfterItEnded() {
		start(RoomPath.Requirement.ANY);
		int[] src = { 0, 1 };
		prefillMem.fill(50, src, -1, new int[0]);
		KVReceiver receiver = decode.receiver(BOOTSTRAP, 50);
		receiver.sendMetadata(new int[] { 8, 9 }, -1, new int[0]);
		KVSender sender = prefill.sender(50);
		sender.init(src.length, -1);
		sender.send(src, new int[0]);
		StepVerifier.create(receiver.completion()).expectComplete().verify(T);
		assertThat(receiver.path()).isEqualTo(new RoomPath(RoomPath.Kind.IN_MEMORY, DecodeSpec.DEFAULT_STRIPES, false));
		assertThat(decodeMem.verify(50, new int[] { 8, 9 }, -1, new int[0])).isNull();
	}

	@Test
	void requiringSharedMemoryInMemoryFailsTheRoomNamingBothPaths() {
		start(RoomPath.Requirement.SHARED_MEMORY);
		KVReceiver receiver = decode.receiver(BOOTSTRAP, 51);
		receiver.sendMetadata(new int[] { 1 }, -1, new int[0]);
		StepVerifier.create(receiver.completion())
				.expectErrorSatisfies(e -> {
					KVTransferException k = (KVTransferException) e;
					assertThat(k.failureCause()).isEqualTo(FailureCause.INCOMPATIBLE);
					assertThat(k.reason()).contains("requires shared memory").contains("is in-memory");
					assertThat(k.landedPages().requested()).containsExactly(1);
					assertThat(k.landedPages().missing()).containsExactly(1);
				})
				.verify(T);
	}
}
