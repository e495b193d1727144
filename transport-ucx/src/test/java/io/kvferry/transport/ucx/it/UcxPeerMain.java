package io.kvferry.transport.ucx.it;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;

import io.kvferry.HostPort;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import io.kvferry.transport.ucx.UcxKVTransport;

/**
 * The process {@link UcxDeadPeerProcessTest} kills: {@code TLS HEARTBEAT_MS OWN_BOOTSTRAP PEER_BOOTSTRAP ROOM}. A
 * prefill rank registered with OWN_BOOTSTRAP that holds every room it is asked for (printing {@code holding ROOM}),
 * and a decode rank that asks the prefill instance of PEER_BOOTSTRAP for ROOM, on one UCX transport; prints
 * {@code ready} and runs until killed.
 */
final class UcxPeerMain {

	private UcxPeerMain() {
	}

	public static void main(String[] args) throws InterruptedException {
		UcxKVTransport transport = HoldingRanks.transport(args[0], Duration.ofMillis(Long.parseLong(args[1])));
		ReactorBootstrapClient client = ReactorBootstrapClient.create();
		HoldingRanks.holdingPrefill(transport, client, HostPort.parse(args[2]),
				sender -> System.out.println("holding " + sender.room()));
		HoldingRanks.ask(HoldingRanks.decode(transport, client), HostPort.parse(args[3]), Long.parseLong(args[4]));
		System.out.println("ready");
		new CountDownLatch(1).await();
	}
}
