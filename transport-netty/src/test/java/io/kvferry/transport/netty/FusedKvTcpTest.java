package io.kvferry.transport.netty;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import io.kvferry.DecodeKVManager;
import io.kvferry.FusedKVLayout;
import io.kvferry.HostPort;
import io.kvferry.KVArgs;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.MemoryRegion;
import io.kvferry.ParallelLayout;
import io.kvferry.PrefillKVManager;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.netty.util.internal.PlatformDependent;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;

/**
 * Rooms move over real TCP between a rank whose K and V share one buffer per layer (every page's K, then every page's
 * V) and a rank with separate K and V buffers, both ways. Each side's memory is filled and checked through the raw
 * buffers it allocated, not through the regions kvferry split them into: every page decode asked for holds exactly
 * prefill's K and V of the matching page, and every other byte of decode's buffers is still zero.
 */
class FusedKvTcpTest {

	private static final Duration T = Duration.ofSeconds(30);
	private static final int LAYERS = 3;
	private static final int PAGES = 8;
	private static final int ITEM = 512;
	private static final int AUX = 64;
	private static final int[] SRC = { 5, 1, 6 };
	private static final int[] DST = { 0, 7, 3 };

	@Test
	void fusedPrefillToSeparateDecode() {
		move(new Cache(true), new Cache(false), 1);
	}

	@Test
	void separatePrefillToFusedDecode() {
		move(new Cache(false), new Cache(true), 2);
	}

	private static void move(Cache prefillCache, Cache decodeCache, long room) {
		prefillCache.fill(room);
		DisposableBootstrapServer bootstrap = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		NettyKVTransport transport = NettyKVTransport.create();
		ReactorBootstrapClient client = ReactorBootstrapClient.create();
		try {
			PrefillKVManager prefill = KVManagerSpec.prefill().kvArgs(prefillCache.args).layout(ParallelLayout.tp(1, 0))
					.transport(transport).bootstrapClient(client).bootstrapAddress(bootstrap.address())
					.bindAddress(new HostPort("127.0.0.1", 0)).startNow(T);
			DecodeKVManager decode = KVManagerSpec.decode().kvArgs(decodeCache.args).transport(transport)
					.bootstrapClient(client).startNow(T);
			try {
				KVReceiver receiver = decode.receiver(bootstrap.address(), room);
				receiver.sendMetadata(DST, 0, new int[0]);
				KVSender sender = prefill.sender(room);
				sender.init(SRC.length, 0);
				sender.send(SRC, new int[0]);
				StepVerifier.create(sender.completion()).expectComplete().verify(T);
				StepVerifier.create(receiver.completion()).expectComplete().verify(T);
			}
			finally {
				decode.disposeNow(T);
				prefill.disposeNow(T);
			}
			decodeCache.expect(room);
		}
		finally {
			transport.disposeNow(T);
			client.dispose();
			bootstrap.disposeNow();
		}
	}

	/**
	 * One rank's cache, fused or not, and the reference bytes: page {@code p} of layer {@code l}'s K ({@code kv} 0) or
	 * V ({@code kv} 1) in room {@code r} holds {@link #at} at each offset.
	 */
	private static final class Cache {

		final boolean fused;
		/** Fused: one buffer per layer of {@code 2 × PAGES} items. Separate: K buffers of every layer, then V. */
		final List<MemoryRegion> buffers = new ArrayList<>();
		final MemoryRegion aux = MemoryRegion.allocate(1, AUX);
		final KVArgs args;

		Cache(boolean fused) {
			this.fused = fused;
			for (int i = 0; i < (fused ? LAYERS : 2 * LAYERS); i++) {
				buffers.add(MemoryRegion.allocate(fused ? 2 * PAGES : PAGES, ITEM));
			}
			KVArgs.Builder b = KVArgs.builder().pageSize(16).auxRegions(List.of(aux));
			args = (fused ? b.fusedKvRegions(buffers, FusedKVLayout.K_THEN_V) : b.kvRegions(buffers)).build();
		}

		/** @return the address of page {@code page} of layer {@code layer}'s K or V, from the buffers as allocated */
		long page(int layer, int kv, int page) {
			if (fused) {
				return buffers.get(layer).address() + (long) (kv * PAGES + page) * ITEM;
			}
			return buffers.get(kv * LAYERS + layer).address() + (long) page * ITEM;
		}

		void fill(long room) {
			for (int l = 0; l < LAYERS; l++) {
				for (int kv = 0; kv < 2; kv++) {
					for (int i = 0; i < SRC.length; i++) {
						long at = page(l, kv, SRC[i]);
						for (int o = 0; o < ITEM; o++) {
							PlatformDependent.putByte(at + o, at(room, l, kv, i, o));
						}
					}
				}
			}
			for (int o = 0; o < AUX; o++) {
				PlatformDependent.putByte(aux.address() + o, at(room, LAYERS, 0, 0, o));
			}
		}

		void expect(long room) {
			for (int l = 0; l < LAYERS; l++) {
				for (int kv = 0; kv < 2; kv++) {
					for (int p = 0; p < PAGES; p++) {
						int position = position(p);
						long at = page(l, kv, p);
						for (int o = 0; o < ITEM; o++) {
							byte want = position < 0 ? 0 : at(room, l, kv, position, o);
							byte got = PlatformDependent.getByte(at + o);
							if (got != want) {
								assertThat(got).as("layer %d %s page %d byte %d (fused=%s)", l, kv == 0 ? "K" : "V",
										p, o, fused).isEqualTo(want);
							}
						}
					}
				}
			}
			for (int o = 0; o < AUX; o++) {
				assertThat(PlatformDependent.getByte(aux.address() + o)).isEqualTo(at(room, LAYERS, 0, 0, o));
			}
		}

		private static int position(int dstPage) {
			for (int i = 0; i < DST.length; i++) {
				if (DST[i] == dstPage) {
					return i;
				}
			}
			return -1;
		}

		/** @return the byte at {@code offset} of the room's {@code position}-th page of one layer's K or V */
		private static byte at(long room, int layer, int kv, int position, int offset) {
			return (byte) ((room * 7919 + layer * 131 + kv * 61 + position * 17 + 1) * 31 + offset);
		}
	}
}
