package io.kvferry.transport.synthetic;

import java.security.SecureRandom;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

import io.kvferry.HostPort;
import io.kvferry.KVFerryException;
import io.kvferry.bootstrap.BootstrapClient;
import io.kvferry.spi.CloseReason;
import io.kvferry.spi.ConnectionHandler;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVTransport;
import org.jspecify.annotations.Nullable;
import reactor.core.Disposable;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * A prefill instance without prefill, for decode capacity benchmarks (SGLang's fake transfer backend, vLLM's decode
 * bench connector): a transport and a bootstrap client that a decode manager is given instead of real ones, which
 * answer its look-ups and its handshakes in-process as a prefill instance of the same sizes would, and serve every
 * room it asks with bytes a {@link SyntheticPattern} fills, at a configurable rate. Decode's own manager, sessions,
 * ledger, layer stream and states run unchanged: a room succeeds only once every byte it was promised landed in its
 * pages, and fails typed as against any peer.
 *
 * <pre>{@code
 * SyntheticPrefill source = SyntheticPrefill.builder()
 *         .attnTpSize(1).pageSize(16)              // the decode ranks' sizes: each synthetic rank mirrors one
 *         .rate(10_000_000_000L)                   // bytes per second for the whole instance; 0: as fast as decode takes
 *         .build();
 * DecodeKVManager decode = KVManagerSpec.decode().kvArgs(args)
 *         .transport(source.transport()).bootstrapClient(source.bootstrapClient()).startNow();
 * KVReceiver r = decode.receiver(source.bootstrapAddress(), room);
 * r.sendMetadata(pages, auxRow, new int[0]);       // Success once every page holds the pattern
 * }</pre>
 *
 * <p>Each synthetic rank mirrors the decode rank that dials it: its handshake carries decode's model, heads, page size,
 * aux and state buffers and main-model KV buffers (so the model fingerprints match), placed at its own TP and PP rank,
 * and it refuses a decode rank of other sizes by name. It answers further stripes' joins and deals each room's blocks
 * (runs of consecutive destination pages of one KV buffer, at most 256 KiB, then the aux row and state slots) over
 * them, with their fences; decode's abort is acknowledged on every stripe, after its last byte. A block's bytes are
 * filled into native staging memory and handed over as views of it. It keeps no leases.
 *
 * <p>The byte rate is the instance's, shared by all its ranks and stripes, and lets one 256 KiB block (or 10 ms at the
 * rate, whichever is more) go at once after a quiet spell. The room rate counts a room once however many synthetic
 * ranks it asks, and lets one room go at once.
 *
 * <p>Thread-safe. {@link #dispose()} closes every connection (decode's rooms in flight fail as a lost connection).
 */
public final class SyntheticPrefill implements Disposable {

	/** Where a synthetic prefill instance's bootstrap server answers, as far as its bootstrap client is concerned. */
	public static final HostPort BOOTSTRAP = new HostPort("synthetic-prefill", 8998);

	/** Most ranks (attention TP size × PP size) a synthetic instance has. */
	public static final int MAX_RANKS = 4096;

	private static final String RANK_HOST = "synthetic-prefill-rank";
	private static final long MIN_BYTE_BURST = ServedRoom.BLOCK_BYTES;

	private final int attnTpSize;
	private final int ppSize;
	private final int pageSize;
	private final long bytesPerSecond;
	private final double roomsPerSecond;
	private final SyntheticPattern pattern;
	private final @Nullable Scheduler scheduler;
	private final @Nullable TokenBucket bytes;
	private final @Nullable TokenBucket rooms;
	private final Rank[] ranks;
	private final KVTransport transport = new SyntheticTransport(this);
	private final BootstrapClient bootstrapClient = new SyntheticBootstrap(this);
	private final SecureRandom random = new SecureRandom();
	private final Set<Lane> open = ConcurrentHashMap.newKeySet();
	private final Map<Long, SyntheticSession> joinable = new ConcurrentHashMap<>();
	private final AtomicInteger ids = new AtomicInteger();
	private final AtomicBoolean disposed = new AtomicBoolean();
	private final LongAdder bytesSent = new LongAdder();
	private final LongAdder roomsServed = new LongAdder();

	private SyntheticPrefill(Builder b) {
		this.attnTpSize = b.attnTpSize;
		this.ppSize = b.ppSize;
		this.pageSize = b.pageSize;
		this.bytesPerSecond = b.bytesPerSecond;
		this.roomsPerSecond = b.roomsPerSecond;
		this.pattern = b.pattern;
		this.scheduler = b.scheduler;
		this.bytes = bytesPerSecond == 0 ? null
				: new TokenBucket(bytesPerSecond, Math.max(MIN_BYTE_BURST, bytesPerSecond / 100));
		int n = attnTpSize * ppSize;
		// A room asks every rank once: each request takes 1/n of a room.
		this.rooms = roomsPerSecond == 0 ? null : new TokenBucket(roomsPerSecond * n, n);
		this.ranks = new Rank[n];
		for (int tp = 0; tp < attnTpSize; tp++) {
			for (int pp = 0; pp < ppSize; pp++) {
				int unique = tp * ppSize + pp;
				ranks[unique] = new Rank(tp, pp, unique, new HostPort(RANK_HOST, 1 + unique), nonZero());
			}
		}
	}

	/** @return a builder of a synthetic instance of attention TP 1, PP 1, unlimited rates and the hashed pattern */
	public static Builder builder() {
		return new Builder();
	}

	/** @return the transport to give the decode managers: it reaches this instance's ranks */
	public KVTransport transport() {
		return transport;
	}

	/** @return the bootstrap client to give the decode managers: it answers the look-ups for this instance */
	public BootstrapClient bootstrapClient() {
		return bootstrapClient;
	}

	/** @return the bootstrap address decode's receivers name for this instance ({@link #BOOTSTRAP}) */
	public HostPort bootstrapAddress() {
		return BOOTSTRAP;
	}

	/** @return payload bytes handed to decode so far */
	public long bytesSent() {
		return bytesSent.sum();
	}

	/** @return rooms whose Success was handed to decode so far, one per synthetic rank that served each */
	public long roomsServed() {
		return roomsServed.sum();
	}

	/** @return connections open to this instance's ranks (one per stripe of each decode rank's session) */
	public int openConnections() {
		return open.size();
	}

	/** Closes every connection: decode's rooms in flight fail as a lost connection, and no new one connects. */
	@Override
	public void dispose() {
		if (disposed.compareAndSet(false, true)) {
			for (Lane l : open) {
				l.closeWith(new CloseReason(CloseReason.Kind.PEER_CLOSED, "synthetic prefill rank " + l.rank.endpoint()
						+ " was disposed"));
			}
		}
	}

	@Override
	public boolean isDisposed() {
		return disposed.get();
	}

	int attnTpSize() {
		return attnTpSize;
	}

	int ppSize() {
		return ppSize;
	}

	int pageSize() {
		return pageSize;
	}

	SyntheticPattern pattern() {
		return pattern;
	}

	Rank rank(int tp, int pp) {
		return ranks[tp * ppSize + pp];
	}

	KVConnection connect(HostPort remote, ConnectionHandler handler) {
		Rank rank = null;
		for (Rank r : ranks) {
			if (r.endpoint().equals(remote)) {
				rank = r;
			}
		}
		if (rank == null) {
			throw new KVFerryException("connection refused: no synthetic prefill rank at " + remote);
		}
		if (disposed.get()) {
			throw new KVFerryException("connection refused: synthetic prefill rank " + remote + " was disposed");
		}
		Scheduler s = scheduler != null ? scheduler : Schedulers.parallel();
		Lane lane = new Lane(this, rank, "synthetic-" + ids.incrementAndGet(), handler, s.createWorker());
		open.add(lane);
		if (disposed.get()) {
			// Disposed meanwhile: the disposal may not have seen this lane.
			lane.closeWith(new CloseReason(CloseReason.Kind.PEER_CLOSED, "synthetic prefill rank " + remote
					+ " was disposed"));
		}
		return lane;
	}

	void closed(Lane lane) {
		open.remove(lane);
	}

	long newToken() {
		return nonZero();
	}

	void joinable(SyntheticSession s) {
		joinable.put(s.token, s);
	}

	@Nullable SyntheticSession joining(long token) {
		return joinable.get(token);
	}

	void forget(SyntheticSession s) {
		joinable.remove(s.token, s);
	}

	/** @return nanoseconds until {@code n} more bytes may go */
	long paceBytes(long n) {
		TokenBucket b = bytes;
		return b == null ? 0 : b.reserve(now(), n);
	}

	/** @return nanoseconds until one more rank's share of a room may start */
	long paceRoom() {
		TokenBucket r = rooms;
		return r == null ? 0 : r.reserve(now(), 1);
	}

	void sent(long n) {
		bytesSent.add(n);
	}

	void served() {
		roomsServed.increment();
	}

	private long now() {
		return (scheduler != null ? scheduler : Schedulers.parallel()).now(TimeUnit.NANOSECONDS);
	}

	private long nonZero() {
		long v;
		do {
			v = random.nextLong();
		}
		while (v == 0);
		return v;
	}

	@Override
	public String toString() {
		return "SyntheticPrefill{attn_tp_size=" + attnTpSize + ", pp_size=" + ppSize + ", page_size=" + pageSize
				+ ", rate=" + (bytesPerSecond == 0 ? "unlimited" : bytesPerSecond + " B/s") + ", rooms="
				+ (roomsPerSecond == 0 ? "unlimited" : roomsPerSecond + "/s") + '}';
	}

	/**
	 * One synthetic rank.
	 *
	 * @param tp its attention TP rank
	 * @param pp its PP rank
	 * @param unique SGLang's unique prefill rank (tp × pp size + pp, without CP)
	 * @param endpoint where decode dials it
	 * @param incarnation what its route and its handshake say of its process
	 */
	record Rank(int tp, int pp, int unique, HostPort endpoint, long incarnation) {
	}

	/** Builds a {@link SyntheticPrefill}; not thread-safe. */
	public static final class Builder {

		private int attnTpSize = 1;
		private int ppSize = 1;
		private int pageSize;
		private long bytesPerSecond;
		private double roomsPerSecond;
		private SyntheticPattern pattern = SyntheticPattern.hashed();
		private @Nullable Scheduler scheduler;

		private Builder() {
		}

		/**
		 * @param size the instance's attention TP size: the decode ranks' own (each synthetic rank mirrors one)
		 * @return this builder
		 */
		public Builder attnTpSize(int size) {
			this.attnTpSize = positive("attnTpSize", size);
			return this;
		}

		/**
		 * @param size the instance's PP size: the decode ranks' own
		 * @return this builder
		 */
		public Builder ppSize(int size) {
			this.ppSize = positive("ppSize", size);
			return this;
		}

		/**
		 * @param tokens tokens per page: the decode ranks' own (required)
		 * @return this builder
		 */
		public Builder pageSize(int tokens) {
			this.pageSize = positive("pageSize", tokens);
			return this;
		}

		/**
		 * @param bytesPerSecond payload bytes per second the whole instance sends, over all its ranks; 0 (the default)
		 *        for as fast as decode takes them
		 * @return this builder
		 */
		public Builder rate(long bytesPerSecond) {
			if (bytesPerSecond < 0) {
				throw new IllegalArgumentException("rate : " + bytesPerSecond + " bytes/s (expected: >= 0, 0 for "
						+ "unlimited)");
			}
			this.bytesPerSecond = bytesPerSecond;
			return this;
		}

		/**
		 * @param roomsPerSecond rooms per second the instance starts, each counted once however many ranks it asks; 0
		 *        (the default) for unlimited
		 * @return this builder
		 */
		public Builder roomRate(double roomsPerSecond) {
			if (!(roomsPerSecond >= 0) || Double.isInfinite(roomsPerSecond)) {
				throw new IllegalArgumentException("roomRate : " + roomsPerSecond + " rooms/s (expected: a finite "
						+ "value >= 0, 0 for unlimited)");
			}
			this.roomsPerSecond = roomsPerSecond;
			return this;
		}

		/**
		 * @param pattern what fills each item; default {@link SyntheticPattern#hashed()}
		 * @return this builder
		 */
		public Builder pattern(SyntheticPattern pattern) {
			this.pattern = Objects.requireNonNull(pattern, "pattern");
			return this;
		}

		/**
		 * @param scheduler runs each connection's deliveries on a worker of its own and paces the rates by its clock
		 *        (a virtual-time scheduler in tests); default {@link Schedulers#parallel()} as it is when each connection
		 *        opens
		 * @return this builder
		 */
		public Builder scheduler(Scheduler scheduler) {
			this.scheduler = Objects.requireNonNull(scheduler, "scheduler");
			return this;
		}

		/**
		 * @return the synthetic instance
		 * @throws IllegalStateException when no page size was given, or the instance has more than
		 *         {@value #MAX_RANKS} ranks
		 */
		public SyntheticPrefill build() {
			if (pageSize == 0) {
				throw new IllegalStateException("pageSize : not set (expected: the decode ranks' page size in tokens)");
			}
			if ((long) attnTpSize * ppSize > MAX_RANKS) {
				throw new IllegalStateException("attnTpSize × ppSize : " + (long) attnTpSize * ppSize + " (expected: "
						+ "at most " + MAX_RANKS + ")");
			}
			return new SyntheticPrefill(this);
		}

		private static int positive(String what, int value) {
			if (value < 1) {
				throw new IllegalArgumentException(what + " : " + value + " (expected: >= 1)");
			}
			return value;
		}
	}
}
