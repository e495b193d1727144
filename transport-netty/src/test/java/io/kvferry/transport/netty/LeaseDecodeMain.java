package io.kvferry.transport.netty;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;

import io.kvferry.DecodeKVManager;
import io.kvferry.HostPort;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVTransferException;
import io.kvferry.ParallelLayout;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import io.kvferry.harness.RankMemory;
import reactor.core.publisher.Flux;

/**
 * The decode rank of {@link LeaseExpiryProcessTest} in a JVM of its own, which the test stops with SIGSTOP.
 * {@code BOOTSTRAP ROOMS HEARTBEAT_MS}: asks the prefill instance behind BOOTSTRAP for rooms 1..ROOMS (one page each),
 * prints {@code waiting ROOMS} once all of them wait for prefill, then each room's outcome ({@code ok ROOM} or
 * {@code failed ROOM CAUSE REASON}). Runs until killed.
 */
final class LeaseDecodeMain {

	private LeaseDecodeMain() {
	}

	public static void main(String[] args) throws InterruptedException {
		HostPort bootstrap = HostPort.parse(args[0]);
		int rooms = Integer.parseInt(args[1]);
		Duration heartbeat = Duration.ofMillis(Long.parseLong(args[2]));
		RankMemory memory = RankMemory.decode(LeaseExpiryProcessTest.SHAPE, ParallelLayout.SINGLE, rooms + 1, 0, 0);
		DecodeKVManager decode = KVManagerSpec.decode().kvArgs(memory.kvArgs())
				.transport(NettyKVTransport.create().eventLoopThreads(1).heartbeatInterval(heartbeat))
				.bootstrapClient(ReactorBootstrapClient.create()).stripes(1).startNow();
		Flux.range(1, rooms).flatMap(room -> {
			KVReceiver r = decode.receiver(bootstrap, room);
			r.sendMetadata(new int[] { room }, -1, new int[0]);
			// A Mono<Void> signals completion, never a value: "ok" is printed from the completion consumer.
			r.completion().subscribe(null, e -> System.out.println("failed " + room + " "
					+ (e instanceof KVTransferException k ? k.failureCause() + " " + k.reason() : e)),
					() -> System.out.println("ok " + room));
			return r.states().filter(s -> s == KVPoll.WAITING_FOR_INPUT || s.isTerminal()).next();
		}).then().block(Duration.ofSeconds(60));
		System.out.println("waiting " + rooms);
		new CountDownLatch(1).await();
	}
}
