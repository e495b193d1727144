package io.kvferry.transport.netty.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.zip.CRC32;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import com.sun.management.ThreadMXBean;
import io.kvferry.ProtocolException;
import io.kvferry.spi.CloseReason;
import io.kvferry.spi.ConnectionHandler;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.PayloadSink;
import io.netty.buffer.AbstractByteBufAllocator;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.buffer.UnpooledHeapByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelId;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.DefaultChannelId;
import io.netty.channel.embedded.EmbeddedChannel;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * Feeds {@link KVFrameDecoder} hundreds of thousands of random and mutated streams on {@link EmbeddedChannel}s, in
 * random read sizes, and checks on every input:
 * <ul>
 * <li>it decodes to valid events (every message survives a re-encode round trip, every payload reaches its sink in
 * order and in full before {@code complete}) or the decoder reports exactly one failure, a {@link ProtocolException}
 * with a reason, and closes the channel; nothing is reported after the failure;</li>
 * <li>an unmutated stream decodes to exactly the events its frames stand for, whatever the read sizes;</li>
 * <li>no exception reaches the end of the pipeline ({@link EmbeddedChannel#checkException()});</li>
 * <li>every inbound buffer and every buffer the decoder allocated is released (refCnt 0);</li>
 * <li>nothing is allocated in proportion to a length or count the stream claims: every buffer array the decoder's
 * cumulation allocates is at most twice the bytes fed (a tracking allocator records each array, growth included), and
 * the Java heap allocated while decoding one input stays under 1 MiB plus 4 KiB per read, far below the claimable
 * 16 MiB.</li>
 * </ul>
 * A second, shorter run feeds similar streams, which start with a handshake, to whole accepting
 * {@link NettyKVConnection}s, fuzzing the handshake's order and the hand-over to the engine too.
 *
 * <p>Each input gets a fresh channel. Seeded and reproducible: input {@code i} is made from
 * {@code SplittableRandom(seed + i × golden)}, and a failure names {@code i}, its mutations, read sizes and bytes.
 * {@code -Dkvferry.fuzz.seed}, {@code -Dkvferry.fuzz.inputs}, {@code -Dkvferry.fuzz.threads} (default 2) and
 * {@code -Dkvferry.fuzz.seconds} (a time budget, default 10 s, so a slow machine tries fewer inputs instead of failing)
 * tune a run.
 * Prints the number of inputs tried, accepted and rejected, and the most frequent rejection reasons.
 */
class KVFrameDecoderFuzzTest {

	private static final long SEED = Long.getLong("kvferry.fuzz.seed", 0x6b7666657272794cL);
	private static final long INPUTS = Long.getLong("kvferry.fuzz.inputs", 800_000L);
	private static final long SECONDS = Long.getLong("kvferry.fuzz.seconds", 10L);
	private static final long CONNECTION_INPUTS = Long.getLong("kvferry.fuzz.connection.inputs", 300_000L);
	private static final long CONNECTION_SECONDS = Long.getLong("kvferry.fuzz.connection.seconds", 6L);
	private static final int THREADS = Integer.getInteger("kvferry.fuzz.threads", 2);
	private static final long GOLDEN = 0x9e3779b97f4a7c15L;

	/** The default frame limit: claims up to 16 MiB pass the prefix check and would show in allocations. */
	private static final int MAX = TransportSettings.DEFAULT.maxFrameLength();

	/** Java heap one input may allocate while it is decoded: exceptions, events, small arrays; never a claim. */
	private static final long HEAP_PER_INPUT = 1 << 20;
	/** Java heap one read may add: the channel's and the decoder's per-read bookkeeping. */
	private static final long HEAP_PER_READ = 4 << 10;

	/** Inputs before the heap bound applies: class loading and first-use caches allocate on the first ones. */
	private static final long WARM_UP = 10_000;

	/** Heap buffers outside leak detection (paranoid records every access, slow and heavy) for the round trips. */
	private static final UnpooledByteBufAllocator PLAIN_HEAP = new UnpooledByteBufAllocator(false, true);

	private static final ChannelId CHANNEL_ID = DefaultChannelId.newInstance();
	private static final ThreadMXBean THREAD_MX = (ThreadMXBean) ManagementFactory.getThreadMXBean();

	/** A whole connection as a listener would make it, with the fuzzed decoder's frame limit. */
	private static final TransportSettings CONNECTION_SETTINGS = TransportSettings.DEFAULT.withMaxFrameLength(MAX);

	/** One per worker thread, reset for each input. */
	private static final ThreadLocal<TrackingAllocator> ALLOCATORS = ThreadLocal.withInitial(TrackingAllocator::new);

	private final FuzzCorpus corpus = new FuzzCorpus(MAX);

	@Test
	void mutatedAndRandomStreamsAreDecodedOrRejectedWithoutEscapesLeaksOrClaimedAllocations() throws Exception {
		Stats stats = runWorkers(INPUTS, SECONDS, (i, ordinal, stat) -> {
			SplittableRandom r = new SplittableRandom(SEED + i * GOLDEN);
			run(i, ordinal, corpus.next(r), r, stat);
		});
		report("decoder", stats);
		assertThat(stats.inputs).isPositive();
		assertThat(stats.accepted).isPositive();
		assertThat(stats.rejected).isPositive();
		assertThat(stats.exact).isPositive();
		assertThat(stats.accepted + stats.rejected).isEqualTo(stats.inputs);
	}

	@Test
	void wholeConnectionsSurviveMutatedHandshakesAndFrames() throws Exception {
		// Each rejected connection logs its reason at WARN; the run checks and counts the reasons instead of logging
		// hundreds of thousands of lines (errors still log).
		Logger connectionLog = (Logger) LoggerFactory.getLogger(NettyKVConnection.class);
		Level level = connectionLog.getLevel();
		connectionLog.setLevel(Level.ERROR);
		Stats stats;
		try {
			stats = runWorkers(CONNECTION_INPUTS, CONNECTION_SECONDS, (i, ordinal, stat) -> {
				SplittableRandom r = new SplittableRandom(~SEED + i * GOLDEN);
				runConnection(i, corpus.nextForConnection(r), r, stat);
			});
		}
		finally {
			connectionLog.setLevel(level);
		}
		report("connection", stats);
		assertThat(stats.inputs).isPositive();
		assertThat(stats.accepted).isPositive();
		assertThat(stats.rejected).isPositive();
		assertThat(stats.exact).isPositive();
	}

	/** What a worker does with input {@code i}. */
	private interface Step {
		void run(long index, long ordinal, Stats stats);
	}

	/**
	 * Runs inputs 0..{@code inputs} on {@link #THREADS} threads (thread {@code t} takes {@code t}, {@code t + THREADS},
	 * ...) until they are done or {@code seconds} passed, and sums what they counted.
	 */
	private static Stats runWorkers(long inputs, long seconds, Step step) throws Exception {
		long start = System.nanoTime();
		long deadline = start + seconds * 1_000_000_000L;
		// One thread per core; their shallow stacks also keep the rejections' exceptions cheap to fill in.
		ExecutorService pool = Executors.newFixedThreadPool(THREADS, r -> {
			Thread t = new Thread(r, "kvferry-fuzz");
			t.setDaemon(true);
			return t;
		});
		try {
			List<Future<Stats>> workers = new ArrayList<>();
			for (int t = 0; t < THREADS; t++) {
				int first = t;
				workers.add(pool.submit(() -> {
					Stats stats = new Stats();
					long done = 0;
					for (long i = first; i < inputs; i += THREADS) {
						if ((done & 1023) == 0 && System.nanoTime() > deadline) {
							break;
						}
						step.run(i, done++, stats);
					}
					return stats;
				}));
			}
			Stats stats = new Stats();
			for (Future<Stats> worker : workers) {
				try {
					stats.add(worker.get());
				}
				catch (ExecutionException e) {
					throw e.getCause() instanceof AssertionError a ? a : new AssertionError(e.getCause());
				}
			}
			stats.millis = (System.nanoTime() - start) / 1_000_000;
			return stats;
		}
		finally {
			pool.shutdownNow();
		}
	}

	private static void report(String target, Stats stats) {
		System.out.printf("kvferry %s fuzz (seed 0x%x, %d threads): %,d inputs (%,d bytes) in %,d ms: %,d accepted, "
				+ "%,d rejected (%,d closed while reading, %,d at end of input), %,d unmutated checked exactly; "
				+ "largest buffer array %,d bytes%n", target, SEED, THREADS, stats.inputs, stats.bytes, stats.millis,
				stats.accepted, stats.rejected, stats.rejectedWhileReading, stats.rejectedAtEnd, stats.exact,
				stats.largestBuffer);
		if (stats.largestHeap > 0) {
			System.out.printf("kvferry %s fuzz: %,d sink failures injected; largest heap per input after warm-up %,d "
					+ "bytes%n", target, stats.injected, stats.largestHeap);
		}
		System.out.println("kvferry " + target + " fuzz: most frequent rejection reasons:");
		stats.reasons.entrySet().stream().sorted(Map.Entry.<String, Long>comparingByValue().reversed()).limit(15)
				.forEach(e -> System.out.printf("  %,9d  %s%n", e.getValue(), e.getKey()));
	}

	/**
	 * Feeds one input to a fresh channel and checks every invariant.
	 *
	 * @param index the input's number (its seed)
	 * @param ordinal how many inputs this thread ran before it, for the heap warm-up
	 */
	private void run(long index, long ordinal, FuzzCorpus.Input input, SplittableRandom r, Stats stats) {
		byte[] bytes = input.bytes();
		boolean exact = input.expected() != null;
		SinkMode mode = exact ? SinkMode.COLLECT : SinkMode.values()[r.nextInt(SinkMode.values().length)];
		Recorder recorder = new Recorder(mode);
		TrackingAllocator alloc = ALLOCATORS.get();
		alloc.reset();
		EmbeddedChannel channel = new EmbeddedChannel(CHANNEL_ID);
		channel.config().setAllocator(alloc);
		channel.pipeline().addLast(new KVFrameDecoder(KVMessage.PROTOCOL_VERSION, MAX, recorder));
		List<ByteBuf> fed = new ArrayList<>();
		int[] split = splitPlan(r, bytes.length);
		long heapBefore = THREAD_MX.getCurrentThreadAllocatedBytes();
		try {
			int pos = 0;
			for (int i = 0; pos < bytes.length && channel.isOpen(); i++) {
				int n = Math.min(split[i % split.length], bytes.length - pos);
				ByteBuf piece = Unpooled.wrappedBuffer(bytes, pos, n);
				fed.add(piece);
				// One socket read each: what EmbeddedChannel.writeInbound does, minus its per-call bookkeeping.
				channel.pipeline().fireChannelRead(piece);
				channel.pipeline().fireChannelReadComplete();
				pos += n;
			}
			channel.runPendingTasks();
			boolean closedWhileReading = !channel.isOpen();
			channel.checkException();
			channel.close();
			channel.checkException();
			channel.finishAndReleaseAll();
			long heap = THREAD_MX.getCurrentThreadAllocatedBytes() - heapBefore;

			if (recorder.violation != null) {
				throw new AssertionError(recorder.violation);
			}
			if (recorder.failures > 1) {
				throw new AssertionError("failure reported " + recorder.failures + " times");
			}
			for (ByteBuf b : fed) {
				if (b.refCnt() != 0) {
					throw new AssertionError("an inbound buffer was not released (refCnt " + b.refCnt() + ")");
				}
			}
			alloc.checkReleased();
			long bound = Math.max(64, 2L * pos);
			if (alloc.largest > bound) {
				throw new AssertionError("the decoder allocated an array of " + alloc.largest + " bytes after "
						+ pos + " bytes were fed (bound " + bound + ")");
			}
			if (ordinal >= WARM_UP) {
				long heapBound = HEAP_PER_INPUT + HEAP_PER_READ * fed.size();
				if (heap > heapBound) {
					throw new AssertionError("decoding one input in " + fed.size() + " reads allocated " + heap
							+ " heap bytes (bound " + heapBound + ")");
				}
				stats.largestHeap = Math.max(stats.largestHeap, heap);
			}

			stats.inputs++;
			stats.bytes += bytes.length;
			stats.largestBuffer = Math.max(stats.largestBuffer, alloc.largest);
			if (recorder.failures == 0) {
				if (closedWhileReading) {
					throw new AssertionError("channel closed without a reported failure");
				}
				if (!recorder.openSinks.isEmpty()) {
					throw new AssertionError("payload left incomplete without a failure");
				}
				stats.accepted++;
			}
			else {
				if (channel.isOpen()) {
					throw new AssertionError("failure reported but the channel is open");
				}
				stats.rejected++;
				if (closedWhileReading) {
					stats.rejectedWhileReading++;
				}
				else {
					stats.rejectedAtEnd++;
				}
				stats.reason(recorder.failure.getMessage());
			}
			if (recorder.injected) {
				stats.injected++;
			}
			if (exact) {
				if (recorder.failures != 0) {
					throw new AssertionError("an unmutated stream was rejected: " + recorder.failure);
				}
				if (!recorder.events.equals(input.expected())) {
					throw new AssertionError("an unmutated stream decoded to " + recorder.events
							+ " instead of " + input.expected());
				}
				stats.exact++;
			}
		}
		catch (Throwable t) {
			throw failure(index, input, split, t);
		}
	}

	private static AssertionError failure(long index, FuzzCorpus.Input input, int[] split, Throwable t) {
		byte[] bytes = input.bytes();
		return new AssertionError("fuzz input #" + index + " (seed 0x" + Long.toHexString(SEED) + ", mutations: "
				+ input.mutations() + ", split " + Arrays.toString(split) + ", " + bytes.length + " bytes: "
				+ ByteBufUtil.hexDump(bytes, 0, Math.min(bytes.length, 256)) + (bytes.length > 256 ? "..." : "")
				+ ") broke an invariant: " + t, t);
	}

	/**
	 * Feeds one input to a fresh channel carrying a whole accepting {@link NettyKVConnection} (idle handler, decoder,
	 * handshake) and checks: nothing escapes, every buffer is released, a closed connection has a protocol reason
	 * (never a pipeline or handler error), the acceptor and the engine's handler hear from the connection only after a
	 * completed handshake, {@code onClose} comes exactly once after one, and an unmutated stream reaches the handler
	 * exactly.
	 */
	private void runConnection(long index, FuzzCorpus.Input input, SplittableRandom r, Stats stats) {
		byte[] bytes = input.bytes();
		TrackingAllocator alloc = ALLOCATORS.get();
		alloc.reset();
		EngineRecorder engine = new EngineRecorder();
		NettyKVConnection[] connection = new NettyKVConnection[1];
		EmbeddedChannel channel = new EmbeddedChannel(CHANNEL_ID, new ChannelInitializer<Channel>() {
			@Override
			protected void initChannel(Channel ch) {
				ch.config().setAllocator(alloc);
				connection[0] = NettyKVConnection.install(ch, CONNECTION_SETTINGS, null, c -> {
					engine.accepted++;
					return engine;
				}, null);
			}
		});
		List<ByteBuf> fed = new ArrayList<>();
		int[] split = splitPlan(r, bytes.length);
		try {
			int pos = 0;
			for (int i = 0; pos < bytes.length && channel.isOpen(); i++) {
				int n = Math.min(split[i % split.length], bytes.length - pos);
				ByteBuf piece = Unpooled.wrappedBuffer(bytes, pos, n);
				fed.add(piece);
				channel.pipeline().fireChannelRead(piece);
				channel.pipeline().fireChannelReadComplete();
				pos += n;
			}
			channel.runPendingTasks();
			boolean closedWhileReading = !channel.isOpen();
			String reason = connection[0].closeReason();
			boolean handshook = connection[0].handshakeFuture().isSuccess();
			channel.checkException();
			channel.finishAndReleaseAll();
			channel.checkException();
			String finalReason = connection[0].closeReason();

			if (engine.violation != null) {
				throw new AssertionError(engine.violation);
			}
			for (ByteBuf b : fed) {
				if (b.refCnt() != 0) {
					throw new AssertionError("an inbound buffer was not released (refCnt " + b.refCnt() + ")");
				}
			}
			alloc.checkReleased();
			if (closedWhileReading && (reason == null || reason.startsWith("pipeline error")
					|| reason.startsWith("handler failed"))) {
				throw new AssertionError("connection closed with reason " + reason);
			}
			if (engine.accepted != (handshook ? 1 : 0)) {
				throw new AssertionError("acceptor called " + engine.accepted + " times, handshake " + handshook);
			}
			if (!handshook && !engine.events.isEmpty()) {
				throw new AssertionError("the handler heard " + engine.events + " without a handshake");
			}
			if (engine.closes != (handshook ? 1 : 0)) {
				throw new AssertionError("onClose called " + engine.closes + " times, handshake " + handshook);
			}
			stats.inputs++;
			stats.bytes += bytes.length;
			stats.largestBuffer = Math.max(stats.largestBuffer, alloc.largest);
			if (closedWhileReading) {
				stats.rejected++;
				stats.rejectedWhileReading++;
				stats.reason(reason);
			}
			else if (!handshook || finalReason.startsWith("connection closed in the middle")) {
				// Cut short: a frame left open, or the handshake never completed, when the input ended.
				stats.rejected++;
				stats.rejectedAtEnd++;
				stats.reason(handshook ? finalReason : "handshake incomplete at end of input");
			}
			else {
				stats.accepted++;
			}
			if (input.expected() != null) {
				if (closedWhileReading || !handshook || !engine.events.equals(input.expected())) {
					throw new AssertionError("an unmutated stream gave handshake " + handshook + ", close reason "
							+ reason + ", events " + engine.events + " instead of " + input.expected());
				}
				stats.exact++;
			}
		}
		catch (Throwable t) {
			throw failure(index, input, split, t);
		}
	}

	/** The engine's side of a fuzzed connection: records messages, data headers and completed payloads. */
	private static final class EngineRecorder implements ConnectionHandler {

		final List<Object> events = new ArrayList<>();
		int accepted;
		int closes;
		String violation;

		@Override
		public void onMessage(KVConnection connection, KVMessage message) {
			events.add(message);
		}

		@Override
		public PayloadSink onData(KVConnection connection, DataHeader header) {
			events.add(header);
			// Each sink its own: a scatter frame's pieces all get theirs before the first byte.
			CRC32 crc = new CRC32();
			long[] received = new long[1];
			return new PayloadSink() {
				@Override
				public void write(ByteBuf segment) {
					received[0] += segment.readableBytes();
					crc.update(segment.nioBuffer());
				}

				@Override
				public void complete() {
					events.add("COMPLETE " + received[0] + " crc " + Long.toHexString(crc.getValue()));
				}
			};
		}


		@Override
		public void onClose(KVConnection connection, CloseReason reason) {
			closes++;
		}
	}

	/**
	 * Read sizes, cycled until the input is fed: one read; byte by byte (short inputs only, to keep the count of reads
	 * per input, and so the run time, bounded); small reads of 1..16 bytes (inputs up to 1 KiB); or two to nine cuts
	 * at random places.
	 */
	private static int[] splitPlan(SplittableRandom r, int length) {
		int mode = r.nextInt(10);
		if (mode < 2 || length < 2) {
			return new int[] { Math.max(1, length) };
		}
		if (mode == 2 && length <= 128) {
			return new int[] { 1 };
		}
		if (mode == 3 && length <= 1024) {
			return r.ints(8, 1, 17).toArray();
		}
		return r.ints(2 + r.nextInt(8), 1, length).toArray();
	}

	private enum SinkMode {
		/** Copy every payload and record its CRC on complete. */
		COLLECT,
		/** Skip payloads (a {@code null} sink). */
		SKIP,
		/** A sink that fails on its first write, as an engine refusing a write does. */
		FAIL
	}

	/** Records events and checks the listener contract as they arrive. */
	private static final class Recorder implements KVFrameDecoder.Listener {

		final List<Object> events = new ArrayList<>();
		final SinkMode mode;
		Throwable failure;
		int failures;
		String violation;
		// Sinks handed out and not completed: one for a DATA frame, one per piece of a scatter frame, in order.
		final List<Sink> openSinks = new ArrayList<>();
		boolean injected;

		Recorder(SinkMode mode) {
			this.mode = mode;
		}

		private void event(Object e) {
			if (failures > 0 && violation == null) {
				violation = "event " + e + " after the failure " + failure;
			}
			// A scatter frame's pieces are all asked for before any of them receives a byte.
			boolean nextPiece = e instanceof DataHeader && openSinks.stream().allMatch(k -> k.received == 0);
			if (!openSinks.isEmpty() && !nextPiece && violation == null) {
				violation = "event " + e + " while a payload was still open";
			}
			if (events.isEmpty() != (e instanceof String s && s.startsWith("PREFACE")) && violation == null) {
				violation = "event " + e + " is not preceded by exactly one preface";
			}
			events.add(e);
		}

		@Override
		public void onPreface(int version) {
			event("PREFACE " + version);
		}

		@Override
		public void onMessage(KVMessage message) {
			event(message);
			// A decoded message is a valid value: it encodes and decodes back to itself.
			ByteBuf frame = KVFrameCodec.encode(PLAIN_HEAP, message, MAX);
			try {
				int length = frame.readInt();
				int type = frame.readUnsignedByte();
				KVMessage again = KVFrameCodec.decode(type, frame.readSlice(length - 1));
				if (!again.equals(message) && violation == null) {
					violation = "message " + message + " does not survive a round trip: " + again;
				}
			}
			finally {
				frame.release();
			}
		}

		@Override
		public void onHeartbeat() {
			event(FuzzCorpus.HEARTBEAT);
		}

		@Override
		public void onAuth(KVFrameCodec.Auth auth) {
			event(auth);
		}

		@Override
		public void onAuthProof(byte[] proof) {
			event("PROOF " + ByteBufUtil.hexDump(proof));
		}

		@Override
		public PayloadSink onData(DataHeader header) {
			event(header);
			if (header.payloadLength() < 0 || header.payloadLength() > MAX) {
				violation = "data header beyond the frame limit: " + header;
			}
			switch (mode) {
				case SKIP:
					return null;
				case FAIL:
					if (header.payloadLength() > 0) {
						injected = true;
						return new PayloadSink() {
							@Override
							public void write(ByteBuf segment) {
								throw new ProtocolException("room " + header.room() + " did not ask for this write");
							}

							@Override
							public void complete() {
								violation = "complete after a failed write";
							}
						};
					}
					return null;
				default:
					Sink sink = new Sink(this, header);
					openSinks.add(sink);
					return sink;
			}
		}

		@Override
		public void onFailure(Throwable cause) {
			failures++;
			failure = cause;
			if (!(cause instanceof ProtocolException) || cause.getMessage() == null || cause.getMessage().isBlank()) {
				violation = "failure without a protocol reason: " + cause;
			}
			openSinks.clear();
		}
	}

	/** Checksums one payload and checks it arrives in order, in non-empty live segments, never beyond its length. */
	private static final class Sink implements PayloadSink {

		private final Recorder recorder;
		private final long length;
		private final CRC32 crc = new CRC32();
		private long received;

		Sink(Recorder recorder, DataHeader header) {
			this.recorder = recorder;
			this.length = header.payloadLength();
		}

		@Override
		public void write(ByteBuf segment) {
			int n = segment.readableBytes();
			if (recorder.openSinks.isEmpty() || recorder.openSinks.get(0) != this) {
				recorder.violation = "a write to a payload that is not the next one";
			}
			if (n == 0 || segment.refCnt() <= 0 || received + n > length) {
				recorder.violation = "bad segment: " + n + " bytes, refCnt " + segment.refCnt() + ", " + received
						+ " of " + length + " received";
				return;
			}
			crc.update(segment.nioBuffer());
			received += n;
		}

		@Override
		public void complete() {
			if (received != length) {
				recorder.violation = "complete after " + received + " of " + length + " bytes";
			}
			if (recorder.openSinks.isEmpty() || recorder.openSinks.remove(0) != this) {
				recorder.violation = "a payload completed out of order";
			}
			recorder.events.add("COMPLETE " + received + " crc " + Long.toHexString(crc.getValue()));
		}
	}

	/**
	 * Unpooled heap buffers that record the size of every array they allocate (growth included) and stay listed
	 * until the input is done, so each one's release can be checked. Not leak-detector wrapped: the check is exact.
	 * Confined to one thread.
	 */
	private static final class TrackingAllocator extends AbstractByteBufAllocator {

		private final List<ByteBuf> buffers = new ArrayList<>();
		long largest;

		TrackingAllocator() {
			super(false);
		}

		@Override
		protected ByteBuf newHeapBuffer(int initialCapacity, int maxCapacity) {
			ByteBuf buf = new UnpooledHeapByteBuf(this, initialCapacity, maxCapacity) {
				@Override
				protected byte[] allocateArray(int size) {
					largest = Math.max(largest, size);
					return super.allocateArray(size);
				}
			};
			buffers.add(buf);
			return buf;
		}

		@Override
		protected ByteBuf newDirectBuffer(int initialCapacity, int maxCapacity) {
			// The decoder asks for heap buffers; should anything ask for direct ones, track them the same way.
			return newHeapBuffer(initialCapacity, maxCapacity);
		}

		@Override
		public boolean isDirectBufferPooled() {
			return false;
		}

		void reset() {
			buffers.clear();
			largest = 0;
		}

		void checkReleased() {
			for (ByteBuf b : buffers) {
				if (b.refCnt() != 0) {
					throw new AssertionError("a buffer the decoder allocated was not released");
				}
			}
		}
	}

	private static final class Stats {

		long inputs;
		long bytes;
		long accepted;
		long rejected;
		long rejectedWhileReading;
		long rejectedAtEnd;
		long exact;
		long injected;
		long largestBuffer;
		long largestHeap;
		long millis;
		final Map<String, Long> reasons = new TreeMap<>();

		/** Counts a reason with its numbers stripped ({@code 0x7f} and {@code -12} both read {@code N}), by kind. */
		void reason(String message) {
			StringBuilder kind = new StringBuilder(Math.min(message.length(), 120));
			for (int i = 0; i < message.length() && kind.length() < 110; i++) {
				char c = message.charAt(i);
				boolean hex = c == '0' && i + 1 < message.length() && message.charAt(i + 1) == 'x';
				boolean negative = c == '-' && i + 1 < message.length() && Character.isDigit(message.charAt(i + 1));
				if (hex || negative || Character.isDigit(c)) {
					i += hex || negative ? 2 : 1;
					while (i < message.length() && Character.digit(message.charAt(i), 16) >= 0) {
						i++;
					}
					i--;
					kind.append('N');
				}
				else {
					kind.append(c);
				}
			}
			reasons.merge(kind.toString(), 1L, Long::sum);
		}

		void add(Stats o) {
			inputs += o.inputs;
			bytes += o.bytes;
			accepted += o.accepted;
			rejected += o.rejected;
			rejectedWhileReading += o.rejectedWhileReading;
			rejectedAtEnd += o.rejectedAtEnd;
			exact += o.exact;
			injected += o.injected;
			largestBuffer = Math.max(largestBuffer, o.largestBuffer);
			largestHeap = Math.max(largestHeap, o.largestHeap);
			o.reasons.forEach((k, v) -> reasons.merge(k, v, Long::sum));
		}
	}

	/** Keeps the CRC helper of the corpus and this test in step. */
	@Test
	void corpusPayloadEventsNameLengthAndChecksum() {
		byte[] b = { 1, 2, 3 };
		CRC32 crc = new CRC32();
		crc.update(b);
		assertThat(FuzzCorpus.complete(b, 0, 3)).isEqualTo("COMPLETE 3 crc " + Long.toHexString(crc.getValue()));
		assertThat(corpus.frames()).hasSizeGreaterThan(15);
	}
}
