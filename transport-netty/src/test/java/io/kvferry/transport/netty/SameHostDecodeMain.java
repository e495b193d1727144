package io.kvferry.transport.netty;

import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;

import io.kvferry.HostPort;
import io.kvferry.test.RecordingHandler;

/**
 * A decode rank in a JVM of its own, for tests that kill it: connects to {@code 127.0.0.1:<port>} with the same-host
 * path on and rings in {@code <dir>}, prints {@code connecting} and then {@code connected} (or {@code failed}), and
 * waits to be killed.
 */
final class SameHostDecodeMain {

	private SameHostDecodeMain() {
	}

	/** @param args the ring directory and the port */
	public static void main(String[] args) throws InterruptedException {
		NettyKVTransport decode = NettyKVTransport.create().sameHost(SameHost.AUTO).sameHostRing(4, 64 * 1024)
				.sameHostDirectory(Path.of(args[0])).eventLoopThreads(1);
		System.out.println("connecting");
		decode.connect(new HostPort("127.0.0.1", Integer.parseInt(args[1])), new RecordingHandler())
				.subscribe(c -> System.out.println("connected"), e -> System.out.println("failed: " + e));
		new CountDownLatch(1).await();
	}
}
