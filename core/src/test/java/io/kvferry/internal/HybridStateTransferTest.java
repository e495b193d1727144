package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import io.kvferry.DecodeKVManager;
import io.kvferry.HostPort;
import io.kvferry.KVArgs;
import io.kvferry.KVManager;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.MemoryRegion;
import io.kvferry.PrefillKVManager;
import io.kvferry.StateKind;
import io.kvferry.test.InMemoryBootstrap;
import io.kvferry.transport.local.InMemoryKVTransport;
import io.netty.util.internal.PlatformDependent;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;

/**
 * A hybrid model's Mamba slot, SWA window pages and DSA pages through both managers, with decode naming fewer SWA
 * pages than prefill sends: each component lands where decode asked, the SWA lists' common prefix only, nothing else
 * changes.
 */
class HybridStateTransferTest {

	private static final Duration T = Duration.ofSeconds(10);
	private static final HostPort BOOTSTRAP = new HostPort("127.0.0.1", 8998);
	private static final List<StateKind> KINDS = List.of(StateKind.MAMBA, StateKind.SWA, StateKind.DSA);
	private static final int[] ITEM = { 256, 64, 32 };
	private static final int ITEMS = 16;

	private final InMemoryKVTransport transport = InMemoryKVTransport.create();
	private final InMemoryBootstrap bootstrap = new InMemoryBootstrap();
	private final List<KVManager> managers = new ArrayList<>();

	@AfterEach
	void close() {
		managers.forEach(m -> m.disposeNow(T));
	}

	private static KVArgs args(byte fill) {
		List<MemoryRegion> state = new ArrayList<>();
		for (int i = 0; i < ITEM.length; i++) {
			MemoryRegion r = MemoryRegion.allocate(ITEMS, ITEM[i]);
			for (int item = 0; item < ITEMS; item++) {
				// Prefill: every item a byte of its own; decode: all one filler, to see what was written.
				PlatformDependent.setMemory(r.itemAddress(item), ITEM[i], fill != 0 ? fill : (byte) (16 * i + item + 1));
			}
			state.add(r);
		}
		MemoryRegion kv = MemoryRegion.allocate(ITEMS, 64);
		return KVArgs.builder().pageSize(4).mla(true).kvRegions(List.of(kv)).stateRegions(state).stateKinds(KINDS)
				.build();
	}

	private static byte at(KVArgs args, int region, int item) {
		return PlatformDependent.getByte(args.stateRegions().get(region).itemAddress(item));
	}

	@Test
	void eachStateComponentLandsWhereDecodeAskedAndSwaMovesItsCommonPrefix() {
		KVArgs src = args((byte) 0);
		KVArgs dst = args((byte) 0x7f);
		PrefillKVManager prefill = KVManagerSpec.prefill().kvArgs(src).transport(transport).bootstrapClient(bootstrap)
				.bootstrapAddress(BOOTSTRAP).bindAddress(new HostPort("127.0.0.1", 0)).startNow(T);
		managers.add(prefill);
		DecodeKVManager decode = KVManagerSpec.decode().kvArgs(dst).transport(transport).bootstrapClient(bootstrap)
				.startNow(T);
		managers.add(decode);

		KVReceiver receiver = decode.receiver(BOOTSTRAP, 1);
		// Mamba slot 9; the SWA window on pages 3, 4 (prefill has one page more); the DSA pages 10..12.
		receiver.sendMetadata(0, new int[] { 5, 6 }, -1, new int[][] { { 9 }, { 3, 4 }, { 10, 11, 12 } });
		KVSender sender = prefill.sender(1);
		sender.init(2, -1);
		sender.send(new int[] { 0 }, new int[][] { {}, {}, {} });
		sender.send(new int[] { 1 }, new int[][] { { 2 }, { 7, 8, 13 }, { 0, 1, 14 } });
		StepVerifier.create(receiver.completion()).expectComplete().verify(T);
		StepVerifier.create(sender.completion()).expectComplete().verify(T);

		assertThat(at(dst, 0, 9)).isEqualTo(at(src, 0, 2));
		assertThat(at(dst, 1, 3)).isEqualTo(at(src, 1, 7));
		assertThat(at(dst, 1, 4)).isEqualTo(at(src, 1, 8));
		assertThat(at(dst, 2, 10)).isEqualTo(at(src, 2, 0));
		assertThat(at(dst, 2, 11)).isEqualTo(at(src, 2, 1));
		assertThat(at(dst, 2, 12)).isEqualTo(at(src, 2, 14));
		// Everything else is untouched: 1 + 2 + 3 items changed of 3 × 16.
		int changed = 0;
		for (int r = 0; r < ITEM.length; r++) {
			for (int item = 0; item < ITEMS; item++) {
				changed += at(dst, r, item) != 0x7f ? 1 : 0;
			}
		}
		assertThat(changed).isEqualTo(6);
		assertThat(decode.stats().bytesReceived()).isEqualTo(2 * 64 + 256 + 2 * 64 + 3 * 32);
	}
}
