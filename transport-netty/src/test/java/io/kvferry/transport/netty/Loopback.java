package io.kvferry.transport.netty;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import io.kvferry.HostPort;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVTransport;
import io.kvferry.test.RecordingHandler;
import io.kvferry.transport.netty.internal.NettyKVConnection;

/**
 * Two transports (as two processes would have) joined by one loopback connection: the listening side plays prefill,
 * the connecting side decode. Closing disposes both transports and waits for their threads.
 */
final class Loopback implements AutoCloseable {

	static final Duration TIMEOUT = Duration.ofSeconds(10);

	final NettyKVTransport listening;
	final NettyKVTransport connecting;
	final KVTransport.Listener listener;
	final RecordingHandler acceptedHandler = new RecordingHandler();
	final RecordingHandler connectedHandler = new RecordingHandler();
	final NettyKVConnection accepted;
	final NettyKVConnection connected;

	private Loopback(NettyKVTransport listening, NettyKVTransport connecting) throws Exception {
		this.listening = listening;
		this.connecting = connecting;
		CompletableFuture<KVConnection> acceptedFuture = new CompletableFuture<>();
		listener = listening.listen(new HostPort("127.0.0.1", 0), c -> {
			acceptedFuture.complete(c);
			return acceptedHandler;
		}).block(TIMEOUT);
		connected = (NettyKVConnection) connecting.connect(listener.address(), connectedHandler).block(TIMEOUT);
		accepted = (NettyKVConnection) acceptedFuture.get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
	}

	/** Connects a fresh pair of transports configured like {@code transport}. */
	static Loopback open(NettyKVTransport transport) throws Exception {
		return new Loopback(transport, transport.eventLoopThreads(1));
	}

	/** Connects {@code connecting} to a listener of {@code listening}, each configured as the caller chose. */
	static Loopback open(NettyKVTransport listening, NettyKVTransport connecting) throws Exception {
		return new Loopback(listening, connecting);
	}

	@Override
	public void close() {
		connecting.disposeNow(TIMEOUT);
		listening.disposeNow(TIMEOUT);
	}
}
