package io.kvferry.examples.snippets;

import java.time.Duration;

import io.kvferry.DecodeKVManager;
import io.kvferry.HostPort;
import io.kvferry.KVArgs;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.ParallelLayout;
import io.kvferry.PrefillKVManager;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.kvferry.transport.netty.NettyKVTransport;

/**
 * The library in a few lines: a prefill and a decode manager in one process move one room (4 pages of 2 layers and
 * an aux row) over TCP on 127.0.0.1, with the bootstrap server embedded. README's "The library in short" is the
 * tagged part of {@link #run()}.
 */
public final class FirstRoom {

	private static final Duration TIMEOUT = Duration.ofSeconds(30);

	private FirstRoom() {
	}

	/**
	 * Moves the room and compares what landed on decode with what prefill had.
	 *
	 * @return whether every page and the aux row arrived intact
	 */
	public static boolean run() {
		DisposableBootstrapServer bootstrap = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		NettyKVTransport transport = NettyKVTransport.create();
		ReactorBootstrapClient client = ReactorBootstrapClient.create();
		KVArgs prefillArgs = Cache.args();
		KVArgs decodeArgs = Cache.args();
		long room = 1;
		int[] srcPages = { 3, 4, 9, 17 };
		int[] dstPages = { 0, 1, 2, 30 };
		Cache.fill(prefillArgs, srcPages, 0, 1);
		try {
			// tag::library-in-short[]
			// Prefill rank: listens on a free port and registers with the bootstrap server.
			PrefillKVManager prefill = KVManagerSpec.prefill()
					.kvArgs(prefillArgs)                        // this rank's registered regions
					.layout(ParallelLayout.tp(1, 0))            // attention TP size 1, this is rank 0
					.transport(transport)                       // NettyKVTransport.create()
					.bootstrapClient(client)                    // ReactorBootstrapClient.create()
					.bootstrapAddress(bootstrap.address())
					.bindAddress(new HostPort("127.0.0.1", 0))
					.startNow(TIMEOUT);
			// Decode rank: finds prefill ranks through their bootstrap server, room by room.
			DecodeKVManager decode = KVManagerSpec.decode()
					.kvArgs(decodeArgs).transport(transport).bootstrapClient(client)
					.startNow(TIMEOUT);

			// Decode admits the request: where its KV goes (pages in token order, aux row, no state slots).
			KVReceiver receiver = decode.receiver(bootstrap.address(), room);
			receiver.sendMetadata(dstPages, 1, new int[0]);
			// Prefill: the room's page count and aux row, then the pages as prefill computes them.
			KVSender sender = prefill.sender(room);
			sender.init(srcPages.length, 0);
			sender.send(srcPages, new int[0]);          // once per chunk; the call reaching the count is the last

			// A scheduler loop subscribes instead of blocking: completion().subscribe(ok -> ..., err -> ...).
			sender.completion().block(TIMEOUT);         // prefill may free its pages
			receiver.completion().block(TIMEOUT);       // every byte landed and was counted: decode may run
			decode.disposeNow(TIMEOUT);
			prefill.disposeNow(TIMEOUT);                // or dispose() and onDispose()
			// end::library-in-short[]
			return Cache.same(prefillArgs, srcPages, 0, decodeArgs, dstPages, 1);
		}
		finally {
			transport.disposeNow(TIMEOUT);
			client.dispose();
			bootstrap.disposeNow();
		}
	}

	/**
	 * Runs the example.
	 *
	 * @param args none
	 */
	public static void main(String[] args) {
		boolean intact = run();
		System.out.println("room 1: " + (intact ? "4 pages and the aux row arrived intact" : "bytes differ"));
		if (!intact) {
			System.exit(1);
		}
	}
}
