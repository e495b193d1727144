package io.kvferry.transport.netty;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;

import io.kvferry.DecodeKVManager;
import io.kvferry.HostPort;
import io.kvferry.KVManagerSpec;
import io.kvferry.PrefillKVManager;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import io.kvferry.harness.RankMemory;
import io.kvferry.test.InMemoryBootstrap;
import reactor.core.Disposable;

/**
 * One rank of {@link PeerRestartProcessTest} in a JVM of its own, killed and started again by the test.
 * {@code prefill BOOTSTRAP PORT HEARTBEAT_MS}: listens on 127.0.0.1:PORT (0: any), registers, serves every room and
 * prints {@code ready PORT INCARNATION}. {@code decode BOOTSTRAP FIRST_ROOM HEARTBEAT_MS}: prints
 * {@code ready INCARNATION}, then keeps rooms in flight and prints each one's outcome ({@code ok ROOM} or
 * {@code failed ROOM CAUSE REASON}). Both run until killed.
 */
final class RestartPeerMain {

	private RestartPeerMain() {
	}

	public static void main(String[] args) throws InterruptedException {
		HostPort bootstrap = HostPort.parse(args[1]);
		Duration heartbeat = Duration.ofMillis(Long.parseLong(args[3]));
		ReactorBootstrapClient client = ReactorBootstrapClient.create();
		if (args[0].equals("prefill")) {
			RankMemory memory = RestartLoad.prefillMemory();
			PrefillKVManager prefill = KVManagerSpec.prefill().kvArgs(memory.kvArgs())
					.transport(RestartLoad.transport(heartbeat)).bootstrapClient(client).bootstrapAddress(bootstrap)
					.bindAddress(new HostPort("127.0.0.1", Integer.parseInt(args[2]))).startNow();
			RestartLoad.serve(prefill, memory);
			System.out.println("ready " + prefill.endpoint().port() + " " + Long.toHexString(prefill.incarnation()));
		}
		else {
			warmUp(heartbeat);
			RankMemory memory = RestartLoad.decodeMemory();
			DecodeKVManager decode = KVManagerSpec.decode().kvArgs(memory.kvArgs())
					.transport(RestartLoad.transport(heartbeat)).bootstrapClient(client).stripes(1).startNow();
			// Ready as an engine is: it reached its bootstrap server once.
			client.health(bootstrap).block(Duration.ofSeconds(30));
			System.out.println("ready " + Long.toHexString(decode.incarnation()));
			RestartLoad.decode(decode, memory, bootstrap, Long.parseLong(args[2]))
					.subscribe(o -> System.out.println(o.line()));
		}
		new CountDownLatch(1).await();
	}

	/**
	 * A few rooms over loopback within this JVM before the decode rank starts, as an engine's start-up check would:
	 * the restarted rank's first real room then measures the peers' recovery, not this JVM loading its classes.
	 */
	private static void warmUp(Duration heartbeat) {
		InMemoryBootstrap registry = new InMemoryBootstrap();
		HostPort own = new HostPort("127.0.0.1", 1);
		RankMemory prefillMemory = RestartLoad.prefillMemory();
		RankMemory decodeMemory = RestartLoad.decodeMemory();
		NettyKVTransport transport = RestartLoad.transport(heartbeat);
		PrefillKVManager prefill = KVManagerSpec.prefill().kvArgs(prefillMemory.kvArgs()).transport(transport)
				.bootstrapClient(registry).bootstrapAddress(own).bindAddress(new HostPort("127.0.0.1", 0)).startNow();
		DecodeKVManager decode = KVManagerSpec.decode().kvArgs(decodeMemory.kvArgs()).transport(transport)
				.bootstrapClient(registry).stripes(1).startNow();
		Disposable engine = RestartLoad.serve(prefill, prefillMemory);
		RestartLoad.decode(decode, decodeMemory, own, 1).filter(RestartLoad.Outcome::ok).take(20)
				.blockLast(Duration.ofSeconds(60));
		engine.dispose();
		decode.disposeNow(Duration.ofSeconds(10));
		prefill.disposeNow(Duration.ofSeconds(10));
	}
}
