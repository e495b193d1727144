package io.kvferry.transport.ucx.it;

import java.time.Duration;
import java.util.function.Consumer;

import io.kvferry.DecodeKVManager;
import io.kvferry.HostPort;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.ParallelLayout;
import io.kvferry.PrefillKVManager;
import io.kvferry.bootstrap.BootstrapClient;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.spi.KVTransport;
import io.kvferry.transport.ucx.UcxKVTransport;

/**
 * The ranks of {@link UcxDeadPeerProcessTest}, in the test's JVM and in {@link UcxPeerMain}'s: a prefill rank that
 * takes every room it is asked for and holds it (its engine never sends), and a decode rank that asks for one room, so
 * that rooms are in flight on both sides of each connection when a process dies.
 */
final class HoldingRanks {

	static final ModelShape SHAPE = new ModelShape(2, 2, 16, 2, 4, false, 0, 0, 0);
	static final int PAGES = 4;

	private HoldingRanks() {
	}

	static UcxKVTransport transport(String tls, Duration heartbeat) {
		return UcxKVTransport.create().tls(tls).netDevices("lo").heartbeatInterval(heartbeat)
				.handshakeTimeout(Duration.ofSeconds(5));
	}

	/**
	 * Starts a prefill rank registered with {@code bootstrap} whose engine creates a sender for every room asked for
	 * and never sends.
	 *
	 * @param held hears each room's sender, once it holds the room
	 */
	static PrefillKVManager holdingPrefill(KVTransport transport, BootstrapClient client, HostPort bootstrap,
			Consumer<KVSender> held) {
		RankMemory memory = RankMemory.prefill(SHAPE, ParallelLayout.SINGLE, PAGES, 0, 0);
		PrefillKVManager prefill = KVManagerSpec.prefill().kvArgs(memory.kvArgs()).transport(transport)
				.bootstrapClient(client).bootstrapAddress(bootstrap).bindAddress(new HostPort("127.0.0.1", 0))
				.startNow();
		prefill.roomRequests().subscribe(req -> {
			KVSender sender = prefill.sender(req.room());
			sender.init(req.pageCount(), -1);
			held.accept(sender);
		});
		return prefill;
	}

	/** Starts a decode rank. */
	static DecodeKVManager decode(KVTransport transport, BootstrapClient client) {
		RankMemory memory = RankMemory.decode(SHAPE, ParallelLayout.SINGLE, PAGES, 0, 0);
		return KVManagerSpec.decode().kvArgs(memory.kvArgs()).transport(transport).bootstrapClient(client)
				.stripes(1).startNow();
	}

	/** Asks the prefill instance registered with {@code bootstrap} for {@code room}. */
	static KVReceiver ask(DecodeKVManager decode, HostPort bootstrap, long room) {
		KVReceiver receiver = decode.receiver(bootstrap, room);
		receiver.sendMetadata(new int[] { 0, 1, 2, 3 }, -1, new int[0]);
		return receiver;
	}
}
