package io.kvferry.transport.ucx.internal;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;
import java.util.function.Supplier;

import io.kvferry.HostPort;
import io.kvferry.KVFerryException;
import io.kvferry.MemoryRegion;
import io.kvferry.spi.CloseReason;
import io.kvferry.spi.ConnectionHandler;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVTransport;
import io.kvferry.spi.NativeMemory;
import io.kvferry.transport.ucx.UcxDataPath;
import io.kvferry.transport.ucx.UcxStats;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.UnpooledByteBufAllocator;
import org.openucx.jucx.ucp.UcpAmData;
import org.openucx.jucx.ucp.UcpConstants;
import org.openucx.jucx.ucp.UcpContext;
import org.openucx.jucx.ucp.UcpParams;
import org.openucx.jucx.ucp.UcpRequest;
import org.openucx.jucx.ucs.UcsConstants;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * What one UCX transport runs: a UCX context, one worker on its own progress thread, the connections of that worker,
 * the regions registered with it, the listeners' sockets (a connection's handshake crosses a short TCP connection to
 * the listener's address, which is also the address a prefill rank advertises), and a timer for heartbeats.
 */
public final class UcxNode {

	private static final Logger log = LoggerFactory.getLogger(UcxNode.class);
	private static final AtomicInteger NODES = new AtomicInteger();
	private static final SecureRandom IDS = new SecureRandom();
	/** Heartbeats and silence are looked at this many times per heartbeat interval. */
	static final int TICKS = 4;

	final UcxSettings settings;
	final UcxLoop loop;
	/** Every buffer the transport allocates (headers, control messages, bounce buffers) comes from here. */
	final UnpooledByteBufAllocator allocator = new UnpooledByteBufAllocator(true);
	private final UcpContext context;
	private final Registrations registrations;
	private final Map<Long, UcxConnection> connections = new HashMap<>();
	// Endpoint closes not completed yet (loop only).
	private final List<UcpRequest> closing = new ArrayList<>();
	final Set<UcxListener> listeners = ConcurrentHashMap.newKeySet();
	private final ScheduledExecutorService timer;
	/** Where handshakes run: they block on their sockets, never on the loop. */
	final ExecutorService handshakes;
	private final Dialler dialler = new Dialler(this);
	private final byte[] workerAddress;
	private final String host;
	private final boolean rdmaDevice;
	private final AtomicBoolean disposed = new AtomicBoolean();
	private final Sinks.Empty<Void> stopped = Sinks.empty();
	private final AtomicBoolean unregisteredLogged = new AtomicBoolean();
	final LongAdder bytesRead = new LongAdder();
	final LongAdder reads = new LongAdder();
	final LongAdder bytesInMessages = new LongAdder();
	final LongAdder messages = new LongAdder();
	final LongAdder remoteKeys = new LongAdder();

	public UcxNode(UcxSettings settings) {
		this.settings = settings;
		int n = NODES.incrementAndGet();
		UcpParams params = new UcpParams().requestAmFeature().requestRmaFeature().requestWakeupFeature();
		if (!settings.tls().isEmpty()) {
			params.setConfig("TLS", settings.tls());
		}
		if (!settings.netDevices().isEmpty()) {
			params.setConfig("NET_DEVICES", settings.netDevices());
		}
		settings.config().forEach(params::setConfig);
		this.context = new UcpContext(params);
		this.registrations = new Registrations(context);
		this.loop = new UcxLoop(context, "kvferry-ucx-" + n);
		ByteBuffer address = loop.worker.getAddress();
		this.workerAddress = new byte[address.remaining()];
		address.get(workerAddress);
		if (loop.worker.getMaxAmHeaderSize() < Wire.MAX_HEADER) {
			throw new KVFerryException("UCX allows active-message headers of " + loop.worker.getMaxAmHeaderSize()
					+ " bytes (expected: at least " + Wire.MAX_HEADER + ")");
		}
		loop.worker.setAmRecvHandler(Wire.AM_ID, this::received, UcpConstants.UCP_AM_FLAG_WHOLE_MSG);
		this.host = settings.hostIdentity().isEmpty() ? bootId() : settings.hostIdentity();
		this.rdmaDevice = hasRdmaDevice();
		this.timer = Executors.newSingleThreadScheduledExecutor(daemon("kvferry-ucx-timer-" + n));
		this.handshakes = Executors.newCachedThreadPool(daemon("kvferry-ucx-handshake-" + n));
		loop.start();
		long quarter = settings.heartbeatInterval().toNanos() / TICKS;
		timer.scheduleAtFixedRate(() -> loop.execute(this::tick), quarter, quarter, TimeUnit.NANOSECONDS);
	}

	/** @return the UCX transports this node allows, for messages */
	public String describeTls() {
		return settings.tls().isEmpty() ? "UCX's default (UCX_TLS or all)" : settings.tls();
	}

	// ---- registration

	/** Registers regions on the loop; the disposable deregisters them there. */
	public Mono<Disposable> register(List<MemoryRegion> regions) {
		List<MemoryRegion> copy = List.copyOf(regions);
		return onLoop(() -> {
			List<Registrations.Entry> added = registrations.add(copy);
			AtomicBoolean gone = new AtomicBoolean();
			return (Disposable) () -> {
				if (gone.compareAndSet(false, true) && !disposed.get()) {
					loop.execute(() -> registrations.remove(added));
				}
			};
		});
	}

	/** @return the regions registered now, sorted by address */
	Registrations.Entry[] registrations() {
		return registrations.all();
	}

	/** A one-sided connection met a block outside every registered region: it went as active messages. */
	void unregisteredSource(long address) {
		if (unregisteredLogged.compareAndSet(false, true)) {
			log.info("a block at 0x{} lies in no region registered with UCX: it goes as active messages (a manager "
					+ "registers its regions as it starts; memory outside them is never read one-sided)",
					Long.toHexString(address));
		}
	}

	// ---- listening

	public Mono<KVTransport.Listener> listen(HostPort bind, Function<KVConnection, ConnectionHandler> acceptor) {
		return Mono.fromCallable(() -> {
			checkOpen();
			ServerSocketChannel server = ServerSocketChannel.open();
			try {
				server.bind(new InetSocketAddress(bind.host(), bind.port()));
			}
			catch (IOException e) {
				server.close();
				throw new KVFerryException("cannot listen on " + bind + ": " + e.getMessage(), e);
			}
			int port = ((InetSocketAddress) server.getLocalAddress()).getPort();
			UcxListener l = new UcxListener(this, new HostPort(bind.host(), port), server, acceptor);
			listeners.add(l);
			l.start();
			return l;
		});
	}

	// ---- connecting

	public Mono<KVConnection> connect(HostPort remote, ConnectionHandler handler) {
		return Mono.create(sink -> {
			checkOpen();
			handshakes.execute(() -> dialler.dial(remote, handler, sink));
		});
	}

	Handshake hello(long id, UcxDataPath path, byte[] nonce, String reached) {
		return new Handshake(id, workerAddress, settings.tls(), host, rdmaDevice, path,
				(int) settings.heartbeatInterval().toMillis(), nonce, reached, new byte[0]);
	}

	// ---- the loop's side

	private int received(long headerAddress, long headerSize, UcpAmData data, Object replyEp) {
		ByteBuf header = NativeMemory.wrap(headerAddress, (int) headerSize);
		try {
			if (header.readableBytes() < Wire.FIXED) {
				log.warn("UCX active message with a {}-byte header dropped (expected: at least {})", headerSize,
						Wire.FIXED);
				return UcsConstants.STATUS.UCS_OK;
			}
			long id = header.readLong();
			long seq = header.readLong();
			int type = header.readUnsignedByte();
			UcxConnection c = connections.get(id);
			if (c == null) {
				// A late message of a closed connection (or one that names none): nobody reads it.
				log.debug("UCX active message {} for unknown connection {} dropped", Wire.name(type), id);
				return UcsConstants.STATUS.UCS_OK;
			}
			return c.received(seq, type, header, data);
		}
		finally {
			header.release();
		}
	}

	private void tick() {
		long now = System.nanoTime();
		long interval = settings.heartbeatInterval().toNanos();
		for (UcxConnection c : new ArrayList<>(connections.values())) {
			c.tick(now, interval);
		}
	}

	/** A connection opened on the loop: its active messages reach it from now on. */
	void added(UcxConnection c) {
		connections.put(c.id, c);
	}

	void removed(UcxConnection c) {
		connections.remove(c.id);
	}

	/** An endpoint is closing: the worker outlives the request. */
	void closing(UcpRequest request) {
		closing.removeIf(UcpRequest::isCompleted);
		closing.add(request);
	}

	private boolean endpointsClosed() {
		closing.removeIf(UcpRequest::isCompleted);
		return closing.isEmpty();
	}

	/**
	 * Runs {@code task} on the loop after {@code delay}. Also while the transport is being disposed: a close it asked
	 * its peers for ends there when a peer does not answer, and the disposal waits for those closes.
	 */
	void after(Duration delay, Runnable task) {
		try {
			timer.schedule(() -> loop.execute(task), delay.toNanos(), TimeUnit.NANOSECONDS);
		}
		catch (RejectedExecutionException e) {
			// The transport stopped: its loop runs no task any more, and nothing waits for this one.
			log.debug("UCX timer stopped before a task after {}", delay);
		}
	}

	// ---- lifecycle

	/** Closes every listener and connection, then the worker and the context. */
	public void dispose() {
		if (!disposed.compareAndSet(false, true)) {
			return;
		}
		for (UcxListener l : List.copyOf(listeners)) {
			l.dispose();
		}
		loop.execute(() -> {
			List<UcxConnection> open = new ArrayList<>(connections.values());
			if (open.isEmpty()) {
				stop();
				return;
			}
			AtomicInteger left = new AtomicInteger(open.size());
			for (UcxConnection c : open) {
				c.onClose().subscribe(null, null, () -> {
					if (left.decrementAndGet() == 0) {
						loop.execute(this::stop);
					}
				});
				c.closeWith(new CloseReason(CloseReason.Kind.DISPOSED, "transport disposed"), true);
			}
		});
	}

	private void stop() {
		loop.stop(() -> registrations.remove(List.of(registrations.all())), this::endpointsClosed,
				settings.handshakeTimeout().toNanos());
		handshakes.execute(() -> {
			try {
				if (!loop.awaitStopped(settings.handshakeTimeout().toMillis() * 2)) {
					log.warn("UCX progress thread {} did not stop", loop);
				}
				else if (!loop.leaked()) {
					context.close();
				}
			}
			catch (InterruptedException e) {
				Thread.currentThread().interrupt();
			}
			finally {
				timer.shutdownNow();
				handshakes.shutdown();
				stopped.tryEmitEmpty();
			}
		});
	}

	public Mono<Void> onDispose() {
		return stopped.asMono();
	}

	public boolean isDisposed() {
		return disposed.get();
	}

	/** @return what the connections received so far, by path */
	public UcxStats stats() {
		return new UcxStats(bytesRead.sum(), reads.sum(), bytesInMessages.sum(), messages.sum(), remoteKeys.sum());
	}

	/** @return bytes of live buffers the transport allocated */
	public long allocatedBytes() {
		return allocator.metric().usedDirectMemory() + allocator.metric().usedHeapMemory();
	}

	private void checkOpen() {
		if (disposed.get()) {
			throw new KVFerryException("UCX transport disposed");
		}
	}

	<T> Mono<T> onLoop(Supplier<T> task) {
		return Mono.create(sink -> loop.execute(() -> {
			try {
				sink.success(task.get());
			}
			catch (RuntimeException e) {
				sink.error(e);
			}
		}));
	}

	<T> T await(Mono<T> work) {
		CompletableFuture<T> f = work.toFuture();
		try {
			return f.get(settings.handshakeTimeout().toMillis(), TimeUnit.MILLISECONDS);
		}
		catch (ExecutionException e) {
			throw e.getCause() instanceof RuntimeException r ? r : new KVFerryException(e.getCause().toString(),
					e.getCause());
		}
		catch (TimeoutException e) {
			throw new KVFerryException("the UCX progress thread did not answer within " + settings.handshakeTimeout());
		}
		catch (InterruptedException e) {
			Thread.currentThread().interrupt();
			throw new KVFerryException("interrupted", e);
		}
	}

	static long newId() {
		long id;
		do {
			id = IDS.nextLong();
		}
		while (id == 0);
		return id;
	}

	private static String bootId() {
		try {
			return Files.readString(Path.of("/proc/sys/kernel/random/boot_id")).trim();
		}
		catch (IOException | RuntimeException e) {
			return "";
		}
	}

	private static boolean hasRdmaDevice() {
		try (var devices = Files.list(Path.of("/sys/class/infiniband"))) {
			return devices.findAny().isPresent();
		}
		catch (IOException | RuntimeException e) {
			return false;
		}
	}

	private static java.util.concurrent.ThreadFactory daemon(String name) {
		AtomicInteger n = new AtomicInteger();
		return r -> {
			Thread t = new Thread(r, name + "-" + n.incrementAndGet());
			t.setDaemon(true);
			return t;
		};
	}
}
