package com.example.kvferry;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import io.kvferry.DecodeKVManager;
import io.kvferry.HostPort;
import io.kvferry.KVArgs;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.MemoryRegion;
import io.kvferry.PrefillKVManager;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.kvferry.transport.netty.NettyKVTransport;
import io.netty.buffer.ByteBuf;
import reactor.core.publisher.Mono;

/**
 * One room's KV cache from a prefill manager to a decode manager in one process, over TCP loopback, with the bootstrap
 * server embedded: 2 layers of 32 pages (16 tokens, 512 bytes each per layer), 4 pages moved, plus one aux row.
 */
public final class FirstTransfer {

	private static final Duration TIMEOUT = Duration.ofSeconds(30);
	private static final int LAYERS = 2;
	private static final int PAGES = 32;
	private static final int PAGE_BYTES = 512;
	private static final int AUX_BYTES = 64;

	private FirstTransfer() {
	}

	/**
	 * Runs the transfer.
	 *
	 * @return how many bytes landed on decode equal to what prefill had
	 */
	public static long run() {
		DisposableBootstrapServer bootstrap = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		NettyKVTransport transport = NettyKVTransport.create();
		ReactorBootstrapClient client = ReactorBootstrapClient.create();
		KVArgs prefillArgs = args();
		KVArgs decodeArgs = args();
		PrefillKVManager prefill = null;
		DecodeKVManager decode = null;
		try {
			// A prefill rank listens on a free port and registers with the bootstrap server.
			prefill = KVManagerSpec.prefill()
					.kvArgs(prefillArgs)
					.transport(transport)
					.bootstrapClient(client)
					.bootstrapAddress(bootstrap.address())
					.bindAddress(new HostPort("127.0.0.1", 0))
					.startNow(TIMEOUT);
			decode = KVManagerSpec.decode()
					.kvArgs(decodeArgs)
					.transport(transport)
					.bootstrapClient(client)
					.startNow(TIMEOUT);

			long room = 1;
			int[] srcPages = { 3, 4, 9, 17 };
			int[] dstPages = { 0, 1, 2, 30 };
			for (int i = 0; i < srcPages.length; i++) {
				for (MemoryRegion layer : prefillArgs.kvRegions()) {
					fill(layer, srcPages[i], (byte) (i + 1));
				}
			}
			fill(prefillArgs.auxRegions().get(0), 0, (byte) 42);

			// Decode first tells where the room's pages go; prefill then sends what it computed.
			KVReceiver receiver = decode.receiver(bootstrap.address(), room);
			receiver.sendMetadata(dstPages, 1, new int[0]);
			KVSender sender = prefill.sender(room);
			sender.init(srcPages.length, 0);
			sender.send(srcPages, new int[0]);

			Mono.when(sender.completion(), receiver.completion()).block(TIMEOUT);

			long equal = 0;
			for (int l = 0; l < LAYERS; l++) {
				for (int i = 0; i < srcPages.length; i++) {
					equal += equalBytes(prefillArgs.kvRegions().get(l), srcPages[i], decodeArgs.kvRegions().get(l),
							dstPages[i]);
				}
			}
			equal += equalBytes(prefillArgs.auxRegions().get(0), 0, decodeArgs.auxRegions().get(0), 1);
			return equal;
		}
		finally {
			if (decode != null) {
				decode.disposeNow(TIMEOUT);
			}
			if (prefill != null) {
				prefill.disposeNow(TIMEOUT);
			}
			transport.disposeNow(TIMEOUT);
			client.dispose();
			bootstrap.disposeNow();
		}
	}

	/** @return the bytes {@link #run()} must find equal */
	public static long expectedBytes() {
		return (long) LAYERS * 4 * PAGE_BYTES + AUX_BYTES;
	}

	/** One rank's registered memory, laid out as SGLang lays out its pools: one region per layer, one aux region. */
	private static KVArgs args() {
		List<MemoryRegion> kv = new ArrayList<>();
		for (int l = 0; l < LAYERS; l++) {
			kv.add(MemoryRegion.allocate(PAGES, PAGE_BYTES));
		}
		return KVArgs.builder()
				.kvRegions(kv)
				.auxRegions(List.of(MemoryRegion.allocate(4, AUX_BYTES)))
				.pageSize(16)
				.build();
	}

	private static void fill(MemoryRegion region, int item, byte value) {
		ByteBuf view = region.wrap((long) item * region.itemLen(), region.itemLen());
		try {
			for (int i = 0; i < region.itemLen(); i++) {
				view.setByte(i, value + i);
			}
		}
		finally {
			view.release();
		}
	}

	private static long equalBytes(MemoryRegion src, int srcItem, MemoryRegion dst, int dstItem) {
		ByteBuf a = src.wrap((long) srcItem * src.itemLen(), src.itemLen());
		ByteBuf b = dst.wrap((long) dstItem * dst.itemLen(), dst.itemLen());
		try {
			long equal = 0;
			for (int i = 0; i < src.itemLen(); i++) {
				if (a.getByte(i) == b.getByte(i)) {
					equal++;
				}
			}
			return equal;
		}
		finally {
			a.release();
			b.release();
		}
	}

	/**
	 * Runs the transfer and prints the result.
	 *
	 * @param args none
	 */
	public static void main(String[] args) {
		long equal = run();
		System.out.println("kvferry sample: " + equal + " of " + expectedBytes() + " bytes arrived intact");
		if (equal != expectedBytes()) {
			System.exit(1);
		}
	}
}
