package io.kvferry.test.tck;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;

import io.kvferry.HostPort;
import io.kvferry.MemoryRegion;
import io.kvferry.spi.ConnectionHandler;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.KVTransport;
import io.kvferry.spi.PayloadSink;
import io.kvferry.test.RecordingHandler;
import io.kvferry.test.RegionSink;
import io.netty.buffer.ByteBuf;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import reactor.core.Disposable;
import reactor.test.StepVerifier;

/**
 * What every test of {@link TransportTck} stands on: the two transports of one test, made by the subclass before it and
 * disposed after it with every listener and memory registration the test opened; the leak checks after it (every
 * landing zone the transport was offered released, no more allocator bytes held than before); and the helpers the
 * tests share: a connected {@link Link}, a landing sink, registered memory, bounded waits.
 */
public abstract class TransportFixture {

	/** Bound of every wait in these tests. */
	protected static final Duration TIMEOUT = Duration.ofSeconds(10);

	/** Pause between two looks at a polled condition: short, and leaves the two-core CI machine to the event loops. */
	private static final long POLL_NANOS = 1_000_000;

	private final List<KVTransport> transports = new ArrayList<>();
	private final List<KVTransport.Listener> listeners = new ArrayList<>();
	private final List<Disposable> registrations = new ArrayList<>();
	private final Queue<ByteBuf> landingZones = new ConcurrentLinkedQueue<>();
	private long allocatedBefore;

	/** The listening side of the current test. */
	protected KVTransport server;
	/** The connecting side of the current test. */
	protected KVTransport client;

	/** @return a new transport for the listening (prefill) side of one test */
	protected abstract KVTransport createServer();

	/**
	 * @param server the test's listening transport
	 * @return a new transport for the connecting (decode) side that can reach {@code server}'s listeners (the same
	 *         object when listeners live in that object)
	 */
	protected abstract KVTransport createClient(KVTransport server);

	/** Releases what a transport of this test holds (threads, sockets); called once per transport after each test. */
	protected abstract void dispose(KVTransport transport);

	/**
	 * @return bytes currently held by live buffers of the allocator the transport takes its buffers from (0 for a
	 *         transport that allocates none)
	 */
	protected abstract long allocatedBytes();

	/**
	 * @return most allocator bytes the transport may hold beyond its idle state while it sends a stream of data
	 *         blocks much larger than this bound (its outbound queue holds descriptors, not copies)
	 */
	protected abstract long inFlightBound();

	/**
	 * @return whether the transport moves device memory here (a UCX built with CUDA support on a GPU host); a transport
	 *         that does not must refuse a device region when it is registered
	 */
	protected boolean reachesDeviceMemory() {
		return false;
	}

	/** @return an address nothing listens on, for the transports of this test */
	protected HostPort unusedAddress() throws IOException {
		try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
			return new HostPort("127.0.0.1", probe.getLocalPort());
		}
	}

	@BeforeEach
	final void createTransports() {
		allocatedBefore = allocatedBytes();
		server = track(createServer());
		client = createClient(server);
		if (client != server) {
			track(client);
		}
	}

	@AfterEach
	final void disposeTransportsAndCheckForLeaks() {
		listeners.forEach(KVTransport.Listener::dispose);
		registrations.forEach(Disposable::dispose);
		transports.forEach(this::dispose);
		assertThat(landingZones).as("landing zones the transport did not release")
				.allSatisfy(zone -> assertThat(zone.refCnt()).isZero());
		long deadline = System.nanoTime() + TIMEOUT.toNanos();
		long allocated = allocatedBytes();
		// Event loops may release their last buffers just after the close they reported: poll, with a deadline.
		while (allocated > allocatedBefore && System.nanoTime() < deadline) {
			LockSupport.parkNanos(POLL_NANOS);
			allocated = allocatedBytes();
		}
		assertThat(allocated).as("allocator bytes held after the test (before it: %d)", allocatedBefore)
				.isLessThanOrEqualTo(allocatedBefore);
	}

	private KVTransport track(KVTransport transport) {
		transports.add(transport);
		return transport;
	}

	/** Disposes {@code listener} after the test, before the transports. */
	void closeAfterTest(KVTransport.Listener listener) {
		listeners.add(listener);
	}

	/** Disposes {@code registration} after the test, before the transports. */
	void releaseAfterTest(Disposable registration) {
		registrations.add(registration);
	}

	/** @return the allocator bytes held when the test began */
	long allocatedBefore() {
		return allocatedBefore;
	}

	/**
	 * Registers a source region with the sending (server) transport, as a manager registers its rank's regions when it
	 * starts: a transport that reads blocks one-sided reads them from registered memory only.
	 *
	 * @return the region
	 */
	protected MemoryRegion registered(MemoryRegion region) {
		registrations.add(server.register(List.of(region)).block(TIMEOUT));
		return region;
	}

	/** A client connection to a server listener, with both sides' handlers. */
	protected record Link(KVTransport.Listener listener, KVConnection accepted, RecordingHandler acceptedHandler,
			KVConnection connected, RecordingHandler connectedHandler) {
	}

	/** @return a listener of {@code server} with one connection from {@code client} */
	protected Link link() throws Exception {
		RecordingHandler acceptedHandler = new RecordingHandler();
		CompletableFuture<KVConnection> accepted = new CompletableFuture<>();
		KVTransport.Listener listener = listen(new HostPort("127.0.0.1", 0), c -> {
			accepted.complete(c);
			return acceptedHandler;
		});
		RecordingHandler connectedHandler = new RecordingHandler();
		KVConnection connected = client.connect(listener.address(), connectedHandler).block(TIMEOUT);
		Objects.requireNonNull(connected, "connected");
		return new Link(listener, accepted.get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS), acceptedHandler, connected,
				connectedHandler);
	}

	/** @return a listener of {@code server} on {@code address}, disposed after the test */
	KVTransport.Listener listen(HostPort address,
			Function<KVConnection, ConnectionHandler> acceptor) {
		KVTransport.Listener listener = server.listen(address, acceptor).block(TIMEOUT);
		Objects.requireNonNull(listener, "listener");
		listeners.add(listener);
		return listener;
	}

	/**
	 * @return a sink writing into {@code region} that offers landing zones (the test checks each was released) and
	 *         runs {@code onComplete} after the payload's last byte
	 */
	protected PayloadSink sink(MemoryRegion region, DataHeader header, AtomicLong received, Runnable onComplete) {
		RegionSink target = new RegionSink(region, header, received, new AtomicLong(), onComplete);
		return new PayloadSink() {
			@Override
			public void write(ByteBuf segment) {
				target.write(segment);
			}

			@Override
			public void complete() {
				target.complete();
			}

			@Override
			public @Nullable ByteBuf landingZone(int minBytes, int maxBytes) {
				ByteBuf zone = target.landingZone(minBytes, maxBytes);
				if (zone != null) {
					landingZones.add(zone);
				}
				return zone;
			}

			@Override
			public void landed(int n) {
				target.landed(n);
			}
		};
	}

	/** Waits, with a deadline, until {@code count} reaches {@code expected}, then checks it went no further. */
	static void awaitCount(AtomicInteger count, int expected) {
		long deadline = System.nanoTime() + TIMEOUT.toNanos();
		while (count.get() < expected && System.nanoTime() < deadline) {
			LockSupport.parkNanos(POLL_NANOS);
		}
		assertThat(count).hasValue(expected);
	}

	/**
	 * Waits until both sides reported their close and their {@code onClose()} completed, then gives a late second
	 * report the time to show: a bounded wait instead of a sleep, one message round trip on a fresh connection.
	 */
	void awaitBothClosed(Link link) throws Exception {
		link.connectedHandler().awaitClose(TIMEOUT);
		link.acceptedHandler().awaitClose(TIMEOUT);
		StepVerifier.create(link.connected().onClose()).expectComplete().verify(TIMEOUT);
		StepVerifier.create(link.accepted().onClose()).expectComplete().verify(TIMEOUT);
		assertThat(link.connected().isActive()).isFalse();
		assertThat(link.accepted().isActive()).isFalse();
		roundTrip();
	}

	/** Connects once more and exchanges one message each way. */
	void roundTrip() throws Exception {
		Link probe = link();
		probe.connected().send(new KVMessage.AbortAck(99));
		assertThat(probe.acceptedHandler().nextMessage(TIMEOUT)).isEqualTo(new KVMessage.AbortAck(99));
		probe.accepted().send(new KVMessage.AbortAck(98));
		assertThat(probe.connectedHandler().nextMessage(TIMEOUT)).isEqualTo(new KVMessage.AbortAck(98));
		probe.connected().close("probe done");
	}
}
