package io.kvferry.transport.netty;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;

import io.kvferry.HostPort;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVSender;
import io.kvferry.ParallelLayout;
import io.kvferry.PrefillKVManager;
import io.kvferry.harness.RankMemory;
import io.kvferry.test.InMemoryBootstrap;

/**
 * A prefill rank in a JVM of its own, for tests that replay a hostile decode against a small heap: listens on
 * 127.0.0.1 over TCP with the shape of {@link OverloadReplayTest}, prints {@code endpoint <port>}, sends the first
 * {@code pages} of every room it is asked for as the room's pages, and runs until killed.
 */
final class OverloadPrefillMain {

	private OverloadPrefillMain() {
	}

	/** @param args the unclaimed-room timeout in milliseconds */
	public static void main(String[] args) throws InterruptedException {
		RankMemory memory = RankMemory.prefill(OverloadReplayTest.SHAPE, ParallelLayout.SINGLE,
				OverloadReplayTest.PREFILL_PAGES, 0, 0);
		PrefillKVManager prefill = KVManagerSpec.prefill().kvArgs(memory.kvArgs())
				.transport(NettyKVTransport.create().eventLoopThreads(1)).bootstrapClient(new InMemoryBootstrap())
				.bootstrapAddress(new HostPort("127.0.0.1", 8998)).bindAddress(new HostPort("127.0.0.1", 0))
				.unclaimedRoomTimeout(Duration.ofMillis(Long.parseLong(args[0]))).startNow();
		// The engine claims only the rooms the test asks it to serve (room ids under 100), so that the hostile
		// requests stay unclaimed, as they would on an engine that never heard of those rooms.
		prefill.roomRequests().filter(r -> r.room() < 100).subscribe(r -> {
			memory.fill(r.room(), new int[] { 1 }, -1, new int[0]);
			KVSender sender = prefill.sender(r.room());
			sender.init(1, -1);
			sender.send(new int[] { 1 }, new int[0]);
		});
		System.out.println("endpoint " + prefill.endpoint().port());
		new CountDownLatch(1).await();
	}
}
