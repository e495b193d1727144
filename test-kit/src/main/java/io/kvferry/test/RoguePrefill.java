package io.kvferry.test;

import java.time.Duration;
import java.util.Objects;
import java.util.function.BiConsumer;

import io.kvferry.HostPort;
import io.kvferry.KVArgs;
import io.kvferry.ParallelLayout;
import io.kvferry.bootstrap.PrefillRegistration;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.KVTransport;
import io.kvferry.spi.PeerLayout;

/**
 * A prefill rank written by hand, for tests of what decode makes of a peer: it answers the handshake with a layout,
 * hands each transfer request to the test's script, acknowledges every abort at once, and is registered with a
 * bootstrap. It speaks over one connection, so decode managers that talk to it use one stripe.
 */
public final class RoguePrefill implements AutoCloseable {

	private static final Duration T = Duration.ofSeconds(10);

	private final KVTransport.Listener listener;

	private RoguePrefill(KVTransport.Listener listener) {
		this.listener = listener;
	}

	/**
	 * @param transport the transport it listens on (127.0.0.1, port 0)
	 * @param bootstrap where it registers
	 * @param bootstrapAddress the instance's bootstrap address decode asks for
	 * @param args the memory its layout describes
	 * @param onRequest what it does with each request, on the connection's thread
	 * @return the running rank
	 */
	public static RoguePrefill start(KVTransport transport, InMemoryBootstrap bootstrap, HostPort bootstrapAddress,
			KVArgs args, BiConsumer<KVConnection, KVMessage.TransferRequest> onRequest) {
		KVTransport.Listener listener = transport.listen(new HostPort("127.0.0.1", 0), conn -> new NoopConnectionHandler() {
			@Override
			public void onMessage(KVConnection c, KVMessage m) {
				if (m instanceof KVMessage.Hello) {
					c.send(new KVMessage.HelloAck(PeerLayout.of(args, ParallelLayout.SINGLE)));
				}
				else if (m instanceof KVMessage.TransferRequest req) {
					onRequest.accept(c, req);
				}
				else if (m instanceof KVMessage.Abort a) {
					c.send(new KVMessage.AbortAck(a.room()));
				}
			}
		}).block(T);
		Objects.requireNonNull(listener, "listener");
		bootstrap.register(bootstrapAddress, PrefillRegistration.prefill(ParallelLayout.SINGLE, "127.0.0.1",
				listener.address().port(), args.pageSize())).block(T);
		return new RoguePrefill(listener);
	}

	@Override
	public void close() {
		listener.dispose();
	}
}
