package io.kvferry.test;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.Function;

import io.kvferry.HostPort;
import io.kvferry.spi.ConnectionHandler;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.KVTransport;
import io.kvferry.spi.ScatterBlock;
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

	private final class Holding implements KVConnection {
		private final KVConnection c;

		Holding(KVConnection c) {
			this.c = c;
		}

		@Override
		public String id() {
			return c.id();
		}

		@Override
		public HostPort remoteAddress() {
			return c.remoteAddress();
		}

		@Override
		public void send(KVMessage message, SendGate gate, SendListener listener) {
			if (message instanceof KVMessage.Abort) {
				synchronized (AbortHoldingTransport.this) {
					if (holding) {
						held.add(() -> c.send(message, gate, listener));
						return;
					}
				}
			}
			c.send(message, gate, listener);
		}

		@Override
		public void sendData(DataBlock block) {
			c.sendData(block);
		}

		@Override
		public void sendScatter(ScatterBlock block) {
			c.sendScatter(block);
		}

		@Override
		public boolean isActive() {
			return c.isActive();
		}

		@Override
		public void close(String reason) {
			c.close(reason);
		}

		@Override
		public Mono<Void> onClose() {
			return c.onClose();
		}
	}
}
