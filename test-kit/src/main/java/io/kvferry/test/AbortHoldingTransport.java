package io.kvferry.test;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.Function;

import io.kvferry.HostPort;
import io.kvferry.spi.ConnectionHandler;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.KVTransport;
import io.kvferry.spi.SendGate;
import io.kvferry.spi.SendListener;
import reactor.core.publisher.Mono;

/**
 * A decode-side {@link KVTransport} that passes everything to another one but, while holding, keeps back the aborts
 * decode sends: prefill then goes on writing a room decode already gave up, as it does when the abort is still on the
 * wire, and a test can watch decode's fence drop those bytes. {@link #release()} sends what was held, in order.
 */
public final class AbortHoldingTransport implements KVTransport {

	private final KVTransport delegate;
	// Guarded by this.
	private boolean holding;
	private final List<Runnable> held = new ArrayList<>();

	public AbortHoldingTransport(KVTransport delegate) {
		this.delegate = Objects.requireNonNull(delegate, "delegate");
	}

	/** Keeps back every abort sent from now on, until {@link #release()}. */
	public synchronized void hold() {
		holding = true;
	}

	/** Sends the aborts held back, in order, and stops holding. */
	public void release() {
		List<Runnable> out;
		synchronized (this) {
			holding = false;
			out = new ArrayList<>(held);
			held.clear();
		}
		out.forEach(Runnable::run);
	}

	@Override
	public Mono<Listener> listen(HostPort bindAddress, Function<KVConnection, ConnectionHandler> acceptor) {
		return delegate.listen(bindAddress, acceptor);
	}

	@Override
	public Mono<KVConnection> connect(HostPort remote, ConnectionHandler handler) {
		return delegate.connect(remote, handler).map(Holding::new);
	}

	private final class Holding extends ForwardingConnection {

		Holding(KVConnection c) {
			super(c);
		}

		@Override
		public void send(KVMessage message, SendGate gate, SendListener listener) {
			if (message instanceof KVMessage.Abort) {
				synchronized (AbortHoldingTransport.this) {
					if (holding) {
						held.add(() -> delegate.send(message, gate, listener));
						return;
					}
				}
			}
			delegate.send(message, gate, listener);
		}
	}
}
