package io.kvferry.test;

import java.util.Arrays;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.function.LongPredicate;
import java.util.function.LongSupplier;

import io.kvferry.HostPort;
import io.kvferry.spi.CloseReason;
import io.kvferry.spi.ConnectionHandler;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.KVTransport;
import io.kvferry.spi.PayloadSink;
import io.kvferry.spi.SendGate;
import io.kvferry.spi.SendListener;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;

/**
 * A {@link KVTransport} that passes everything to another one and watches the lease renewals ({@link KVMessage.Renew})
 * on it. On decode's side (its connections) it can drop them, or leave rooms out of them, as a decode rank that hangs
 * or forgot a room would, while the connection and its heartbeats go on; it records when the last renewal went out.
 * On prefill's side (its listener) it records when renewals arrived and the longest gap between two on a connection.
 * Times come from {@code clock} (nanoseconds; a virtual clock in tests on virtual time).
 */
public final class RenewalTap implements KVTransport {

	private final KVTransport delegate;
	private final LongSupplier clock;
	private volatile boolean dropping;
	private volatile LongPredicate renewed = room -> true;
	private final AtomicLong sent = new AtomicLong();
	private final AtomicLong dropped = new AtomicLong();
	private final AtomicLong received = new AtomicLong();
	private final AtomicLong roomsReceived = new AtomicLong();
	private volatile long lastSentNanos = Long.MIN_VALUE;
	private volatile long lastReceivedNanos = Long.MIN_VALUE;
	private final AtomicLong longestGapNanos = new AtomicLong();

	/**
	 * @param delegate the transport that moves everything
	 * @param clock now, in nanoseconds
	 */
	public RenewalTap(KVTransport delegate, LongSupplier clock) {
		this.delegate = Objects.requireNonNull(delegate, "delegate");
		this.clock = Objects.requireNonNull(clock, "clock");
	}

	/** @return a tap on {@link System#nanoTime()} */
	public static RenewalTap of(KVTransport delegate) {
		return new RenewalTap(delegate, System::nanoTime);
	}

	/** Drops every renewal decode sends from now on, as a hung decode rank would (its connection stays open). */
	public void dropRenewals() {
		dropping = true;
	}

	/** Leaves out of decode's renewals every room {@code renewed} refuses, as a decode rank that forgot them would. */
	public void renewOnly(LongPredicate renewed) {
		this.renewed = Objects.requireNonNull(renewed, "renewed");
	}

	/** @return renewals decode sent through the tap (dropped ones not counted) */
	public long sent() {
		return sent.get();
	}

	/** @return renewals the tap dropped */
	public long dropped() {
		return dropped.get();
	}

	/** @return when decode's last renewal went out, or {@link Long#MIN_VALUE} */
	public long lastSentNanos() {
		return lastSentNanos;
	}

	/** @return renewals prefill received */
	public long received() {
		return received.get();
	}

	/** @return rooms listed in the renewals prefill received, counted once per renewal */
	public long roomsReceived() {
		return roomsReceived.get();
	}

	/** @return when prefill received the last renewal, or {@link Long#MIN_VALUE} */
	public long lastReceivedNanos() {
		return lastReceivedNanos;
	}

	/** @return the longest time between two renewals prefill received on one connection */
	public long longestGapNanos() {
		return longestGapNanos.get();
	}

	@Override
	public Mono<Listener> listen(HostPort bindAddress, Function<KVConnection, ConnectionHandler> acceptor) {
		return delegate.listen(bindAddress, c -> new Receiving(acceptor.apply(c)));
	}

	@Override
	public Mono<KVConnection> connect(HostPort remote, ConnectionHandler handler) {
		return delegate.connect(remote, handler).map(Sending::new);
	}

	private final class Receiving implements ConnectionHandler {
		private final ConnectionHandler h;
		// Called serially for one connection.
		private long last = Long.MIN_VALUE;

		Receiving(ConnectionHandler h) {
			this.h = h;
		}

		@Override
		public void onMessage(KVConnection connection, KVMessage message) {
			if (message instanceof KVMessage.Renew r) {
				long now = clock.getAsLong();
				if (last != Long.MIN_VALUE) {
					long gap = now - last;
					longestGapNanos.accumulateAndGet(gap, Math::max);
				}
				last = now;
				lastReceivedNanos = now;
				received.incrementAndGet();
				roomsReceived.addAndGet(r.rooms().length);
			}
			h.onMessage(connection, message);
		}

		@Override
		public @Nullable PayloadSink onData(KVConnection connection, DataHeader header) {
			return h.onData(connection, header);
		}

		@Override
		public void onClose(KVConnection connection, CloseReason reason) {
			h.onClose(connection, reason);
		}
	}

	private final class Sending extends ForwardingConnection {

		Sending(KVConnection c) {
			super(c);
		}

		@Override
		public void send(KVMessage message, SendGate gate, SendListener listener) {
			if (message instanceof KVMessage.Renew r) {
				if (dropping) {
					dropped.incrementAndGet();
					listener.written();
					return;
				}
				message = new KVMessage.Renew(Arrays.stream(r.rooms()).filter(renewed).toArray());
				lastSentNanos = clock.getAsLong();
				sent.incrementAndGet();
			}
			delegate.send(message, gate, listener);
		}
	}
}
