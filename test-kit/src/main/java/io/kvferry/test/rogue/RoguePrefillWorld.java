package io.kvferry.test.rogue;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import io.kvferry.DecodeKVManager;
import io.kvferry.FailureCause;
import io.kvferry.HostPort;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVTransferException;
import io.kvferry.LandedPages;
import io.kvferry.MemoryRegion;
import io.kvferry.ParallelLayout;
import io.kvferry.PrefillKVManager;
import io.kvferry.bootstrap.PrefillRegistration;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.KVTransport;
import io.kvferry.spi.RegionKind;
import io.kvferry.spi.ScatterHeader;
import io.kvferry.test.InMemoryBootstrap;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Hooks;
import reactor.core.publisher.Mono;
import reactor.test.scheduler.VirtualTimeScheduler;

/**
 * A decode rank of the real engine served by two prefill ranks: a well-behaved one (the real engine) and a rogue
 * ({@link RoguePrefillPeer}) that writes whatever a step tells it. The world keeps a model of every room decode opened
 * (its pages, its aux row, and for a rogue room every byte the rogue wrote) and checks after every step:
 * <ul>
 * <li>a room that reached Success holds every granted byte as the source has it, and still does until its pages are
 * reused; a layer the room emitted held its bytes when it was emitted;</li>
 * <li>a room that was sent a write outside its grant, a byte twice, or a report that does not match what was sent
 * never succeeds, and a rogue room finished honestly while clean does;</li>
 * <li>the heap a live room's ledger holds stays within a constant times the room's items;</li>
 * <li>no room stays in a state past that state's timeout, and a failed room's pages are released within the
 * handshake timeout of its failure;</li>
 * <li>the rooms of the well-behaved rank succeed byte-exact unless the test aborted them or left them past a
 * timeout, and decode's pages no room holds stay zero;</li>
 * <li>no error is dropped by Reactor (a callback that threw).</li>
 * </ul>
 * Steps run on virtual time when the setup gives a virtual-time scheduler (everything then happens on the step's
 * thread, in order), else on the transport's threads, and the checks that need a settled world wait for it.
 */
public final class RoguePrefillWorld implements AutoCloseable {

	/** Starts the rogue's listener, with the peer's answers. */
	@FunctionalInterface
	public interface RogueServer {
		KVTransport.Listener listen(RoguePrefillPeer peer);
	}

	/** The heap a live decode room's ledger holds, in bytes, or -1 when the room has none (yet, or any more). */
	@FunctionalInterface
	public interface LedgerProbe {
		long retainedBytes(DecodeKVManager decode, long room);
	}

	/**
	 * @param transports makes decode's and the good prefill's transport (the in-memory one: the same instance, which
	 *        the rogue listens on too)
	 * @param server starts the rogue's listener
	 * @param virtualTime the managers' timer, callback scheduler and the transport's scheduler; null for real time
	 * @param stateTimeout every state's timeout on both managers
	 * @param handshakeTimeout decode's handshake timeout (and bound on an abort's acknowledgement)
	 * @param ledger reads decode's ledgers, or null where they cannot be read
	 */
	public record Setup(Supplier<KVTransport> transports, RogueServer server, @Nullable VirtualTimeScheduler virtualTime,
			Duration stateTimeout, Duration handshakeTimeout, @Nullable LedgerProbe ledger) {
	}

	/** Which bytes a rogue write covers. */
	public enum Write {
		WHOLE_ITEM, HEAD, TAIL, MIDDLE, STRIDED, TWO_PAGES, AUX_ROW, DUPLICATE, SCATTER,
		SCATTER_OVERLAPPING, UNGRANTED_PAGE, OTHER_ROOMS_PAGE, NO_SUCH_REGION, PAST_REGION_END, NEGATIVE_OFFSET, OVERFLOW, EMPTY,
		OVERLAPPING_CHUNKS, UNGRANTED_AUX, STATE_REGION
	}

	/** What the rogue reports of a room. */
	public enum Report {
		SUCCESS_AS_SENT, SUCCESS_EXTRA_BYTES, SUCCESS_MISSING_BYTES, SUCCESS_WRONG_CHECKSUM, SUCCESS_NO_CHECKSUM,
		SUCCESS_WRONG_FENCES, SUCCESS_TWICE, FAILED, FENCE_AS_SENT, FENCE_WRONG_BYTES, FENCE_WRONG_CHECKSUM,
		FENCE_TWICE
	}

	/** A frame naming a room the rogue was not asked for. */
	public enum Foreign {
		DATA, FENCE, SUCCESS, FAILED, ABORT_ACK
	}

	/** A control message prefill never sends, or not then. */
	public enum Stray {
		HELLO_ACK, JOINED, REJECT, DRAINING, STATUS_ON_DATA_STRIPE, ABORT_ACK, RENEW, TRANSFER_REQUEST, HELLO, JOIN
	}

	static final ModelShape SHAPE = new ModelShape(2, 2, 16, 2, 4, false, 0, 64, 0);
	static final int PAGES = 48;
	static final int AUX_ROWS = 16;
	private static final int SRC_PAGES = 512;
	private static final int STRIPES = 2;
	private static final HostPort GOOD = new HostPort("10.0.0.1", 1);
	private static final HostPort ROGUE = new HostPort("10.0.0.2", 1);
	private static final Duration T = Duration.ofSeconds(20);
	// How long a step on real time waits for decode's request to reach the rogue (a handshake the rogue does not
	// answer takes decode's handshake timeout).
	private static final Duration ASKED = Duration.ofSeconds(1);
	// A room's ledger: a few words per buffer, and per item at most a bit, a count, and the runs of an item written in
	// parts (the decode layout allows 4 tokens x 2 heads + 33 runs of two ints each).
	static final long LEDGER_PER_BUFFER = 256;
	static final long LEDGER_PER_ITEM = 512;
	// The runs of equally written bytes decode keeps per item written in pieces, as its security page documents: one
	// per head of each token of a page and 33 more; two per prefill rank in an aux row and 33 more.
	private static final int KV_RUNS = SHAPE.pageSize() * SHAPE.kvHeads() + 1 + 32;
	private static final int AUX_RUNS = 2 + 1 + 32;

	private final Setup setup;
	private final @Nullable VirtualTimeScheduler vts;
	private final InMemoryBootstrap bootstrap = new InMemoryBootstrap();
	final RankMemory decodeMem = RankMemory.decode(SHAPE, ParallelLayout.SINGLE, PAGES, AUX_ROWS, 0);
	private final RankMemory goodMem = RankMemory.prefill(SHAPE, ParallelLayout.SINGLE, PAGES, AUX_ROWS, 0);
	private final RankMemory rogueMem = RankMemory.prefill(SHAPE, ParallelLayout.SINGLE, SRC_PAGES, SRC_PAGES / 4, 0);
	final int itemLen = rogueMem.kvArgs().kvRegions().get(0).itemLen();
	final int auxLen = rogueMem.kvArgs().auxRegions().get(0).itemLen();
	final int kvBuffers = rogueMem.kvArgs().kvRegions().size();
	final RoguePrefillPeer rogue;
	private final KVTransport.Listener rogueListener;
	private final PrefillKVManager good;
	private final DecodeKVManager decode;
	final List<RoomModel> rooms = new CopyOnWriteArrayList<>();
	private final Deque<Integer> freePages = new ArrayDeque<>();
	private final Deque<Integer> freeAux = new ArrayDeque<>();
	private final List<String> violations = new CopyOnWriteArrayList<>();
	private final List<String> steps = new ArrayList<>();
	// Sessions the rogue broke for good (a closed stripe, a frame decode closes the connection for, silence): their
	// rooms fail with them, so none of them is expected to succeed.
	private final java.util.Set<RoguePrefillPeer.Session> doomed = java.util.concurrent.ConcurrentHashMap.newKeySet();
	private long nextRoom = 1;
	private int nextSrcPage;
	private int nextSrcAux;

	public RoguePrefillWorld(Setup setup, long seed) {
		this.setup = setup;
		this.vts = setup.virtualTime();
		Hooks.onErrorDropped(e -> violations.add("Reactor dropped an error: " + e));
		for (int p = 0; p < PAGES; p++) {
			freePages.add(p);
		}
		for (int a = 0; a < AUX_ROWS; a++) {
			freeAux.add(a);
		}
		this.rogue = new RoguePrefillPeer(rogueMem.kvArgs(), seed);
		KVTransport decodeTransport = setup.transports().get();
		this.good = timed(KVManagerSpec.prefill().kvArgs(goodMem.kvArgs()).transport(setup.transports().get())
				.bootstrapClient(bootstrap).bootstrapAddress(GOOD).bindAddress(new HostPort("127.0.0.1", 0))
				.name("good-prefill")).startNow(T);
		this.rogueListener = setup.server().listen(rogue);
		bootstrap.register(ROGUE, PrefillRegistration.prefill(ParallelLayout.SINGLE, "127.0.0.1",
				rogueListener.address().port(), SHAPE.pageSize())).block(T);
		this.decode = timed(KVManagerSpec.decode().kvArgs(decodeMem.kvArgs()).transport(decodeTransport)
				.bootstrapClient(bootstrap).stripes(STRIPES).checksums(true).maxRooms(4096, 4096)
				.handshakeTimeout(setup.handshakeTimeout()).name("decode")).startNow(T);
	}

	private <S extends KVManagerSpec<S, ?>> S timed(S spec) {
		S timed = spec.bootstrapTimeout(setup.stateTimeout()).waitingTimeout(setup.stateTimeout())
				.transferTimeout(setup.stateTimeout());
		return vts == null ? timed : timed.timer(vts).callbackScheduler(vts);
	}

	// ---- the clock ------------------------------------------------------------------------------------------------

	long now() {
		return vts != null ? vts.now(TimeUnit.NANOSECONDS) : System.nanoTime();
	}

	private boolean virtual() {
		return vts != null;
	}

	/** Runs what is due now (virtual time); nothing on real time, where the transport's threads do. */
	private void settle() {
		if (vts != null) {
			vts.advanceTime();
		}
	}

	// ---- rooms ----------------------------------------------------------------------------------------------------

	/** Decode opens a room asked of the rogue. */
	public void openRogue(int pages, boolean aux) {
		open(true, pages, aux);
	}

	/** Decode opens a room asked of the good prefill, whose engine claims it and holds it until {@link #sendGood}. */
	public void openGood(int pages, boolean aux) {
		open(false, pages, aux);
	}

	private void open(boolean rogueRoom, int n, boolean withAux) {
		int[] pages = takePages(n);
		if (pages == null) {
			step("open " + (rogueRoom ? "rogue" : "good") + " room: no free pages");
			return;
		}
		int aux = withAux && !freeAux.isEmpty() ? freeAux.poll() : -1;
		long id = nextRoom++;
		KVReceiver r = decode.receiver(rogueRoom ? ROGUE : GOOD, id);
		RoomModel m = new RoomModel(id, rogueRoom, pages, aux, r, kvBuffers, itemLen, auxLen);
		m.opened = now();
		m.since = m.opened;
		rooms.add(m);
		watch(m);
		step("open " + m);
		if (!rogueRoom) {
			goodMem.fill(id, pages, aux, new int[0]);
			m.sender = good.sender(id);
			m.sender.init(n, aux);
		}
		r.sendMetadata(pages, aux, new int[0]);
		settle();
		if (rogueRoom && !virtual()) {
			// The rogue's steps act on the rooms it was asked for: on real time the request comes a moment later.
			Mono.firstWithSignal(Mono.fromFuture(rogue.whenAsked(id)), r.states().filter(KVPoll::isTerminal).next(),
					Mono.delay(ASKED)).onErrorResume(e -> Mono.empty()).block(T);
		}
		check();
	}

	/**
	 * Follows the room's states, layers and completion, checking each as it comes (on the callback scheduler). The
	 * room's pages are reused only once all three ended, so that no check reads pages already given to another room.
	 */
	private void watch(RoomModel m) {
		Mono<Void> states = m.receiver.states().doOnNext(s -> {
			m.state = s;
			m.since = now();
			if (s == KVPoll.SUCCESS) {
				String wrong = decodeMem.verify(m.id, m.pages, m.aux, new int[0]);
				if (wrong != null) {
					violations.add(m + " reached Success with bytes that are not the source's: " + wrong);
				}
				m.verified = true;
				if (m.mustFail != null) {
					violations.add(m + " reached Success although " + m.mustFail);
				}
			}
		}).then();
		Mono<Void> layers = m.receiver.layers().doOnNext(layer -> {
			String wrong = decodeMem.verifyLayer(m.id, m.pages, 0, layer);
			if (wrong != null) {
				violations.add(m + " emitted layer " + layer + " with bytes that are not the source's: " + wrong);
			}
		}).then();
		Mono<Void> completion = m.receiver.completion().doOnSuccess(v -> m.released = true).doOnError(e -> {
			m.error = e;
			m.released = true;
			if (e instanceof KVTransferException k) {
				checkLanded(m, k.landedPages());
			}
			if (!m.rogue && !m.aborted && !timedOut(m, e)) {
				violations.add(m + ", asked of the well-behaved prefill rank, failed: " + e);
			}
		}).onErrorResume(e -> Mono.empty());
		m.done = Mono.when(states, layers, completion).doFinally(signal -> m.settled = true).cache();
		m.done.subscribe();
	}

	/**
	 * A failed room says which pages landed whole in which layer: each of them must hold the source's bytes there, as
	 * the engine may reuse them as they are.
	 */
	private void checkLanded(RoomModel m, LandedPages landed) {
		if (!landed.isKnown()) {
			return;
		}
		for (int layer = 0; layer < landed.layers(); layer++) {
			for (int page : landed.landed(layer)) {
				int position = indexOf(m.pages, page);
				String wrong = position < 0 ? "page " + page + " is not the room's"
						: decodeMem.verifyLayer(m.id, new int[] { page }, position, layer);
				if (wrong != null) {
					violations.add(m + " failed reporting page " + page + " of layer " + layer + " landed whole, but "
							+ "it is not the source's: " + wrong);
				}
			}
		}
	}

	/** @return whether a good room failed by its own timeout (the test left it unsent past it) */
	private static boolean timedOut(RoomModel m, Throwable e) {
		return e instanceof KVTransferException k && k.failureCause() == FailureCause.TIMEOUT && !m.sent;
	}

	/** The good prefill's engine sends a held room's pages. */
	public void sendGood(int pick) {
		RoomModel m = pick(pick, r -> !r.rogue && !r.sent && r.sender != null && !r.isTerminal());
		if (m == null) {
			return;
		}
		m.sent = true;
		step("send " + m);
		Objects.requireNonNull(m.sender, "sender").send(m.pages, new int[0]);
		settle();
		check();
	}

	/** Decode's engine gives up a room. */
	public void abort(int pick) {
		RoomModel m = pick(pick, r -> !r.isTerminal());
		if (m == null) {
			return;
		}
		m.aborted = true;
		step("abort " + m);
		m.receiver.abort("the test gives up");
		settle();
		check();
	}

	/** Time passes (virtual time only; on real time a step does not wait). */
	public void advance(Duration d) {
		if (vts == null) {
			return;
		}
		step("advance " + d.toMillis() + " ms");
		vts.advanceTimeBy(d);
		check();
	}

	// ---- the rogue's knobs ----------------------------------------------------------------------------------------

	public void handshake(RoguePrefillPeer.Handshake h) {
		step("handshake " + h);
		rogue.handshake(h);
	}

	public void ackAborts(boolean ack) {
		step("ack aborts " + ack);
		rogue.ackAborts(ack);
	}

	/** The rogue closes one of its connections. */
	public void closeStripe(int stripe) {
		RoguePrefillPeer.Session s = rogue.current();
		RogueLink l = s == null ? null : rogue.link(s, stripe % s.width());
		if (s == null || l == null) {
			return;
		}
		step("close " + l);
		doom(s);
		l.close();
		settle();
		check();
	}

	/** The rogue stops answering heartbeats (where the transport has them). */
	public void silence(int stripe) {
		RoguePrefillPeer.Session s = rogue.current();
		RogueLink l = s == null ? null : rogue.link(s, stripe % s.width());
		if (s != null && l != null && l.silence()) {
			step("silence " + l);
			doom(s);
		}
	}

	// ---- what the rogue writes ------------------------------------------------------------------------------------

	/** @return a rogue room decode asked of the rogue, picked by {@code pick}; null when there is none */
	private @Nullable RoomModel asked(int pick) {
		return pick(pick, r -> r.rogue && rogue.asked(r.id) != null);
	}

	/** @return the rogue's source pages for the room's positions, filled with the room's pattern on first use */
	private int[] source(RoomModel m) {
		if (m.srcPages != null) {
			return m.srcPages;
		}
		if (nextSrcPage + m.pages.length > SRC_PAGES) {
			throw new IllegalStateException("the rogue's memory is used up: " + nextSrcPage + " pages");
		}
		int[] src = new int[m.pages.length];
		for (int i = 0; i < src.length; i++) {
			src[i] = nextSrcPage++;
		}
		m.srcPages = src;
		m.srcAux = m.aux >= 0 ? nextSrcAux++ : -1;
		rogueMem.fill(m.id, src, m.srcAux, new int[0]);
		return src;
	}

	private MemoryRegion kv(int buffer) {
		return rogueMem.kvArgs().kvRegions().get(buffer);
	}

	/**
	 * The rogue writes bytes of one of its rooms.
	 *
	 * @param buffer, position, a, b pick the buffer, the page position and the bytes (each reduced to what the room
	 *        has)
	 */
	public void write(int pick, Write kind, int stripe, int buffer, int position, int a, int b) {
		RoomModel m = asked(pick);
		if (m == null) {
			return;
		}
		// Picked among the rooms the rogue was asked.
		RoguePrefillPeer.Asked asked = Objects.requireNonNull(rogue.asked(m.id), "asked");
		RogueLink link = rogue.link(asked.session(), stripe % asked.session().width());
		if (link == null) {
			return;
		}
		int[] srcPages = source(m);
		int s = stripe % asked.session().width();
		int buf = Math.floorMod(buffer, kvBuffers);
		int pos = Math.floorMod(position, m.pages.length);
		int x = Math.floorMod(a, itemLen);
		int y = Math.floorMod(b, itemLen);
		int from = Math.min(x, y);
		int to = Math.max(x, y) + 1;
		long dstItem = (long) m.pages[pos] * itemLen;
		long srcItem = kv(buf).itemAddress(srcPages[pos]);
		RoomModel.Write w = null;
		String bad = null;
		switch (kind) {
			case WHOLE_ITEM -> w = kvWrite(s, m, buf, dstItem, srcItem, itemLen);
			case HEAD -> w = kvWrite(s, m, buf, dstItem, srcItem, to);
			case TAIL -> w = kvWrite(s, m, buf, dstItem + from, srcItem + from, itemLen - from);
			case MIDDLE -> w = kvWrite(s, m, buf, dstItem + from, srcItem + from, to - from);
			case STRIDED -> {
				// Chunks of 1..16 bytes, 0..15 bytes apart, as many as fit in the item from a start that leaves room.
				int chunk = 1 + Math.floorMod(a, 16);
				int stride = chunk + Math.floorMod(b, 16);
				int count = 1 + (itemLen - chunk) / stride;
				count = 1 + Math.floorMod(a ^ b, count);
				int span = (count - 1) * stride + chunk;
				int start = Math.floorMod(a + b, itemLen - span + 1);
				w = new RoomModel.Write(s, new DataHeader(m.id, RegionKind.KV, buf, dstItem + start, chunk, stride,
						count), srcItem + start, stride);
			}
			case TWO_PAGES -> {
				if (pos + 1 < m.pages.length && m.pages[pos + 1] == m.pages[pos] + 1) {
					// Consecutive positions on consecutive pages: their source pages are consecutive too.
					w = kvWrite(s, m, buf, dstItem + from, srcItem + from, itemLen - from + to);
				}
				else {
					w = kvWrite(s, m, buf, dstItem, srcItem, itemLen);
				}
			}
			case AUX_ROW -> {
				if (m.aux < 0) {
					return;
				}
				int ax = Math.floorMod(a, auxLen);
				int ay = Math.floorMod(b, auxLen);
				int af = Math.min(ax, ay);
				int at = Math.max(ax, ay) + 1;
				w = new RoomModel.Write(s, new DataHeader(m.id, RegionKind.AUX, 0, (long) m.aux * auxLen + af, at - af,
						0, 1), rogueMem.kvArgs().auxRegions().get(0).itemAddress(m.srcAux) + af, 0);
			}
			case SCATTER, SCATTER_OVERLAPPING -> {
				scatter(m, link, s, kind == Write.SCATTER_OVERLAPPING, buf, pos, a, b);
				return;
			}
			case DUPLICATE -> {
				if (m.writes.isEmpty()) {
					return;
				}
				RoomModel.Write before = m.writes.get(Math.floorMod(a, m.writes.size()));
				w = new RoomModel.Write(s, before.header(), before.srcAddress(), before.srcStride());
			}
			case UNGRANTED_PAGE -> {
				int page = ungranted(m, a);
				bad = "the rogue wrote page " + page + ", which the room did not ask for";
				w = new RoomModel.Write(s, new DataHeader(m.id, RegionKind.KV, buf, (long) page * itemLen + from,
						to - from, 0, 1), srcItem + from, 0);
			}
			case OTHER_ROOMS_PAGE -> {
				RoomModel other = pick(a, r -> r != m && !r.recycled);
				if (other == null) {
					return;
				}
				int page = other.pages[Math.floorMod(b, other.pages.length)];
				bad = "the rogue wrote page " + page + " of " + other;
				w = new RoomModel.Write(s, new DataHeader(m.id, RegionKind.KV, buf, (long) page * itemLen, itemLen, 0,
						1), srcItem, 0);
			}
			case NO_SUCH_REGION -> {
				bad = "the rogue wrote a region decode does not have";
				int region = Math.floorMod(a, 3) == 0 ? -1 : kvBuffers - 1 + Math.floorMod(a, 3);
				w = new RoomModel.Write(s, new DataHeader(m.id, RegionKind.KV, region, dstItem, itemLen, 0, 1),
						srcItem, 0);
			}
			case PAST_REGION_END -> {
				bad = "the rogue wrote past the region's end";
				w = new RoomModel.Write(s, new DataHeader(m.id, RegionKind.KV, buf, (long) PAGES * itemLen - from,
						itemLen, 0, 1), srcItem, 0);
			}
			case NEGATIVE_OFFSET -> {
				bad = "the rogue wrote at a negative offset";
				w = new RoomModel.Write(s, new DataHeader(m.id, RegionKind.KV, buf, -1L - from, itemLen, 0, 1),
						srcItem, 0);
			}
			case OVERFLOW -> {
				bad = "the rogue wrote a header whose end overflows 64 bits";
				w = new RoomModel.Write(s, new DataHeader(m.id, RegionKind.KV, buf, dstItem, 8, Long.MAX_VALUE / 2 + a,
						3), srcItem, 8);
			}
			case EMPTY -> {
				bad = "the rogue wrote an empty block";
				w = new RoomModel.Write(s, new DataHeader(m.id, RegionKind.KV, buf, dstItem, (a & 1) == 0 ? 0 : 8,
						8, (a & 1) == 0 ? 1 : 0), srcItem, 8);
			}
			case OVERLAPPING_CHUNKS -> {
				bad = "the rogue wrote chunks that overlap";
				w = new RoomModel.Write(s, new DataHeader(m.id, RegionKind.KV, buf, dstItem, 16, 8, 2), srcItem, 8);
			}
			case UNGRANTED_AUX -> {
				int row = m.aux >= 0 ? (m.aux + 1 + Math.floorMod(a, AUX_ROWS - 1)) % AUX_ROWS : Math.floorMod(a,
						AUX_ROWS);
				bad = "the rogue wrote aux row " + row + ", which the room did not ask for";
				w = new RoomModel.Write(s, new DataHeader(m.id, RegionKind.AUX, 0, (long) row * auxLen, auxLen, 0, 1),
						rogueMem.kvArgs().auxRegions().get(0).itemAddress(0), 0);
			}
			case STATE_REGION -> {
				bad = "the rogue wrote a state region decode does not have";
				w = new RoomModel.Write(s, new DataHeader(m.id, RegionKind.STATE, 0, 0, 8, 0, 1), srcItem, 0);
			}
		}
		// Every kind of write sets it.
		send(m, Objects.requireNonNull(w, "write"), bad, link);
	}

	/**
	 * Writes pieces of several of the room's pages in one scatter frame: in ascending order of buffer and offset, none
	 * overlapping another, unless {@code overlapping} (the last piece then repeats part of the one before).
	 */
	private void scatter(RoomModel m, RogueLink link, int stripe, boolean overlapping, int buffer, int position, int a,
			int b) {
		int[] srcPages = source(m);
		int n = 1 + Math.floorMod(a, 6);
		List<long[]> pieces = new ArrayList<>();
		for (int i = 0; i < n; i++) {
			int buf = Math.floorMod(buffer + i, kvBuffers);
			int pos = Math.floorMod(position + i, m.pages.length);
			int from = Math.floorMod(a * (i + 1), itemLen);
			int len = 1 + Math.floorMod(b * (i + 1), itemLen - from);
			pieces.add(new long[] { buf, (long) m.pages[pos] * itemLen + from, len,
					kv(buf).itemAddress(srcPages[pos]) + from });
		}
		pieces.sort((x, y) -> x[0] != y[0] ? Long.compare(x[0], y[0]) : Long.compare(x[1], y[1]));
		List<long[]> kept = new ArrayList<>();
		for (long[] p : pieces) {
			long[] prev = kept.isEmpty() ? null : kept.get(kept.size() - 1);
			if (prev == null || prev[0] != p[0] || prev[1] + prev[2] <= p[1]) {
				kept.add(p);
			}
		}
		if (overlapping) {
			long[] last = kept.get(kept.size() - 1);
			kept.add(new long[] { last[0], last[1], last[2], last[3] });
		}
		int count = kept.size();
		int[] regions = new int[count];
		long[] offsets = new long[count];
		int[] lengths = new int[count];
		long[] src = new long[count];
		for (int i = 0; i < count; i++) {
			long[] p = kept.get(i);
			regions[i] = (int) p[0];
			offsets[i] = p[1];
			lengths[i] = (int) p[2];
			src[i] = p[3];
		}
		ScatterHeader header = new ScatterHeader(m.id, RegionKind.KV, count, regions, offsets, lengths);
		step("rogue scatters " + header + " on stripe " + stripe + " of " + m + (overlapping ? " (overlapping)" : ""));
		touched(m);
		String wrong = overlapping ? "the rogue scattered overlapping pieces" : null;
		if ((m.fenced & 1 << stripe) != 0 || m.reported) {
			m.clean = false;
		}
		for (int i = 0; i < count; i++) {
			RoomModel.Write w = new RoomModel.Write(stripe, header.piece(i), src[i], 0);
			String piece = countGranted(m, w);
			wrong = wrong != null ? wrong : piece;
			m.tally(w);
		}
		if (wrong != null) {
			m.clean = false;
			judged(m, stripe, wrong);
			doom(Objects.requireNonNull(rogue.asked(m.id), "asked").session());
		}
		link.scatter(header, src);
		settle();
		check();
	}

	private RoomModel.Write kvWrite(int stripe, RoomModel m, int buf, long dst, long src, int len) {
		return new RoomModel.Write(stripe, new DataHeader(m.id, RegionKind.KV, buf, dst, len, 0, 1), src, 0);
	}

	/** Sends a write, counting what it covers of the room's grant and tallying it on its stripe. */
	private void send(RoomModel m, RoomModel.Write w, @Nullable String bad, RogueLink link) {
		touched(m);
		step("rogue writes " + w.header() + " on stripe " + w.stripe() + " of " + m + (bad == null ? "" : " (" + bad
				+ ")"));
		String wrong = bad;
		if (wrong == null) {
			wrong = countGranted(m, w);
			m.writes.add(w);
		}
		if (wrong != null) {
			m.clean = false;
			judged(m, w.stripe(), wrong);
			if (bad != null) {
				doom(Objects.requireNonNull(rogue.asked(m.id), "asked").session());
			}
		}
		if ((m.fenced & 1 << w.stripe()) != 0 || m.reported) {
			// Bytes after the stripe's fence or after a report: the honest sums no longer tell what landed.
			m.clean = false;
		}
		m.tally(w);
		link.data(w.header(), w.srcAddress(), w.srcStride());
		settle();
		check();
	}

	/**
	 * @return why the write is wrong, or null when it writes only granted bytes of the room, none twice, and leaves no
	 *         item cut into more runs of equally written bytes than decode keeps for an honest writer
	 */
	private @Nullable String countGranted(RoomModel m, RoomModel.Write w) {
		DataHeader h = w.header();
		if (h.kind() == RegionKind.AUX) {
			long start = h.dstOffset() - (long) m.aux * auxLen;
			boolean twice = m.count(w, m.auxCounts, (int) start, (int) (start + h.chunkLen()));
			return twice ? "the rogue wrote aux bytes twice"
					: runs(m.auxCounts, 0, auxLen) > AUX_RUNS ? "the rogue cut the aux row into more than " + AUX_RUNS
							+ " runs" : null;
		}
		boolean twice = false;
		String cut = null;
		for (int c = 0; c < h.count(); c++) {
			long start = h.dstOffset() + (h.count() == 1 ? 0 : c * h.dstStride());
			long end = start + h.chunkLen();
			for (long item = start / itemLen; item * itemLen < end; item++) {
				int pos = indexOf(m.pages, (int) item);
				int from = (int) (Math.max(start, item * itemLen) - item * itemLen);
				int to = (int) (Math.min(end, (item + 1) * itemLen) - item * itemLen);
				twice |= m.count(w, m.kvCounts[h.region()], pos * itemLen + from, pos * itemLen + to);
				if (cut == null && runs(m.kvCounts[h.region()], pos * itemLen, itemLen) > KV_RUNS) {
					cut = "the rogue cut page " + item + " of region " + h.region() + " into more than " + KV_RUNS
							+ " runs";
				}
			}
		}
		return twice ? "the rogue wrote bytes of region " + h.region() + " twice" : cut;
	}

	/** @return runs of equally written bytes in {@code counts[from, from + len)} */
	private static int runs(byte[] counts, int from, int len) {
		int runs = 1;
		for (int b = from + 1; b < from + len; b++) {
			if (counts[b] != counts[b - 1]) {
				runs++;
			}
		}
		return runs;
	}

	/**
	 * Decode must fail the room for a frame, when it sees the frame while the room is live: always on virtual time
	 * (where a step's frame is read in the step); on real time only for a frame on stripe 0 before any report, which
	 * decode reads before any report that could let the room end first.
	 */
	private void judged(RoomModel m, int stripe, String why) {
		if (m.mustFail == null && !m.isTerminal() && (virtual() || stripe == 0 && !m.reported)) {
			m.mustFail = why;
		}
	}

	/** The rogue reports on one of its rooms. */
	public void report(int pick, Report kind, int stripe, int arg) {
		RoomModel m = asked(pick);
		if (m == null) {
			return;
		}
		RoguePrefillPeer.Session session = Objects.requireNonNull(rogue.asked(m.id), "asked").session();
		int s = Math.floorMod(stripe, session.width());
		RogueLink control = rogue.link(session, 0);
		RogueLink data = rogue.link(session, s == 0 ? Math.min(1, session.width() - 1) : s);
		if (control == null || data == null) {
			return;
		}
		KVMessage.Status honest = m.success(true);
		int dataStripe = rogueStripe(session, data);
		KVMessage msg;
		RogueLink on = control;
		// A report decode must fail the room for (a count or checksum that is not what landed), or one that only
		// makes the honest sums meaningless.
		boolean mustFail = true;
		boolean unclean = true;
		switch (kind) {
			case SUCCESS_AS_SENT -> {
				msg = honest;
				mustFail = false;
				unclean = m.reported;
			}
			case SUCCESS_EXTRA_BYTES -> msg = new KVMessage.Status(m.id, KVPoll.SUCCESS, 0, "", honest.bytes() + 1
					+ Math.floorMod(arg, 4096), honest.checksum(), honest.fences());
			case SUCCESS_MISSING_BYTES -> {
				if (honest.bytes() == 0) {
					return;
				}
				msg = new KVMessage.Status(m.id, KVPoll.SUCCESS, 0, "", honest.bytes() - 1 - Math.floorMod(arg,
						(int) Math.min(honest.bytes(), 4096)), honest.checksum(), honest.fences());
			}
			case SUCCESS_WRONG_CHECKSUM -> msg = new KVMessage.Status(m.id, KVPoll.SUCCESS, 0, "", honest.bytes(),
					(honest.checksum() + 1 + Math.floorMod(arg, 1000)) & 0xFFFF_FFFFL, honest.fences());
			case SUCCESS_NO_CHECKSUM -> msg = new KVMessage.Status(m.id, KVPoll.SUCCESS, 0, "", honest.bytes(),
					KVMessage.NO_CHECKSUM, honest.fences());
			case SUCCESS_WRONG_FENCES -> {
				// Naming a stripe that carried nothing only delays the verdict until a fence comes: not a lie by itself.
				int fences = (honest.fences() ^ (2 << Math.floorMod(arg, 7))) & KVMessage.Status.MAX_FENCES;
				msg = new KVMessage.Status(m.id, KVPoll.SUCCESS, 0, "", honest.bytes(), honest.checksum(), fences);
				mustFail = false;
			}
			case SUCCESS_TWICE -> {
				// The first may already have made the room succeed; the second then finds it ended.
				control.send(honest);
				settle();
				msg = honest;
				mustFail = false;
			}
			case FAILED -> {
				msg = new KVMessage.Status(m.id, KVPoll.FAILED, 0, "the rogue fails room " + m.id, 0,
						KVMessage.NO_CHECKSUM, 0, Math.floorMod(arg, 256), Math.floorMod(arg, 1 << 20));
				mustFail = false;
				unclean = false;
			}
			case FENCE_AS_SENT -> {
				on = data;
				msg = m.fence(dataStripe, true);
				// A fence of nothing, a second one, or one on stripe 0 breaks the rules; an exact one does not.
				mustFail = false;
				unclean = dataStripe == 0 || m.stripeBytes[dataStripe] == 0 || (m.fenced & 1 << dataStripe) != 0;
			}
			case FENCE_WRONG_BYTES -> {
				on = data;
				KVMessage.Fence f = m.fence(dataStripe, true);
				msg = new KVMessage.Fence(m.id, f.bytes() + 1 + Math.floorMod(arg, 100), f.checksum());
			}
			case FENCE_WRONG_CHECKSUM -> {
				on = data;
				KVMessage.Fence f = m.fence(dataStripe, true);
				msg = new KVMessage.Fence(m.id, f.bytes(), (f.checksum() + 1) & 0xFFFF_FFFFL);
			}
			case FENCE_TWICE -> {
				on = data;
				KVMessage.Fence f = m.fence(dataStripe, true);
				data.send(f);
				settle();
				msg = f;
			}
			default -> throw new IllegalStateException(kind.toString());
		}
		step("rogue sends " + msg + " on " + on + " for " + m);
		touched(m);
		boolean fence = msg instanceof KVMessage.Fence;
		int stripeOfMsg = fence ? dataStripe : 0;
		if (mustFail) {
			judged(m, stripeOfMsg, "the rogue sent " + kind + ": " + msg);
		}
		if (unclean) {
			m.clean = false;
		}
		if (fence) {
			m.fenced |= 1 << dataStripe;
		}
		else {
			if (kind == Report.SUCCESS_AS_SENT && !m.reported && m.clean && complete(m) && fencesSent(m) && !m.aborted
					&& !m.isTerminal() && intact(session)) {
				m.mustSucceed = true;
			}
			m.reported = true;
		}
		on.send(msg);
		settle();
		check();
	}

	/**
	 * The rogue broke the session for good. On real time a room of it finished cleanly may now fail before decode
	 * judged its Success (the connection closes first), so it is no longer expected to succeed.
	 */
	private void doom(RoguePrefillPeer.Session s) {
		doomed.add(s);
		if (!virtual()) {
			for (RoomModel m : rooms) {
				RoguePrefillPeer.Asked a = m.rogue ? rogue.asked(m.id) : null;
				if (a != null && a.session() == s) {
					m.mustSucceed = false;
				}
			}
		}
	}

	/**
	 * The rogue sends more for a room. On real time decode may not have judged an honest finish of it yet, and a frame
	 * after a Success may fail the room: it is no longer expected to succeed. On virtual time the finish was judged in
	 * its own step.
	 */
	private void touched(RoomModel m) {
		if (!virtual()) {
			m.mustSucceed = false;
		}
	}

	/** @return whether the session may still carry a room to its end: not broken, every stripe open */
	private boolean intact(RoguePrefillPeer.Session s) {
		if (doomed.contains(s)) {
			return false;
		}
		for (int i = 0; i < s.width(); i++) {
			RogueLink l = rogue.link(s, i);
			if (l == null || !l.isOpen()) {
				return false;
			}
		}
		return true;
	}

	private static int rogueStripe(RoguePrefillPeer.Session s, RogueLink l) {
		for (int i = 0; i < s.stripes.length; i++) {
			if (s.stripes[i] == l) {
				return i;
			}
		}
		return 0;
	}

	private static boolean fencesSent(RoomModel m) {
		return (m.fenced & m.fences()) == m.fences();
	}

	/** @return whether every granted byte of the room was written */
	private static boolean complete(RoomModel m) {
		for (byte[] counts : m.kvCounts) {
			for (byte c : counts) {
				if (c == 0) {
					return false;
				}
			}
		}
		for (byte c : m.auxCounts) {
			if (c == 0) {
				return false;
			}
		}
		return true;
	}

	/**
	 * The rogue finishes a room as an honest rank would: every granted byte not written yet, once, on one stripe, then
	 * each stripe's fence and the Success. A room that was clean must then succeed.
	 */
	public void finish(int pick, int stripe) {
		RoomModel m = asked(pick);
		if (m == null) {
			return;
		}
		RoguePrefillPeer.Session session = Objects.requireNonNull(rogue.asked(m.id), "asked").session();
		int s = Math.floorMod(stripe, session.width());
		RogueLink link = rogue.link(session, s);
		RogueLink control = rogue.link(session, 0);
		if (link == null || control == null) {
			return;
		}
		int[] srcPages = source(m);
		step("rogue finishes " + m + " on stripe " + s);
		touched(m);
		for (int buf = 0; buf < kvBuffers; buf++) {
			for (int pos = 0; pos < m.pages.length; pos++) {
				int from = -1;
				for (int b = 0; b <= itemLen; b++) {
					boolean missing = b < itemLen && m.kvCounts[buf][pos * itemLen + b] == 0;
					if (missing && from < 0) {
						from = b;
					}
					else if (!missing && from >= 0) {
						long dst = (long) m.pages[pos] * itemLen + from;
						sendQuiet(m, kvWrite(s, m, buf, dst, kv(buf).itemAddress(srcPages[pos]) + from, b - from),
								link);
						from = -1;
					}
				}
			}
		}
		if (m.aux >= 0) {
			int from = -1;
			for (int b = 0; b <= auxLen; b++) {
				boolean missing = b < auxLen && m.auxCounts[b] == 0;
				if (missing && from < 0) {
					from = b;
				}
				else if (!missing && from >= 0) {
					sendQuiet(m, new RoomModel.Write(s, new DataHeader(m.id, RegionKind.AUX, 0, (long) m.aux * auxLen
							+ from, b - from, 0, 1), rogueMem.kvArgs().auxRegions().get(0).itemAddress(m.srcAux) + from,
							0), link);
					from = -1;
				}
			}
		}
		for (int i = 1; i < session.width(); i++) {
			RogueLink l = rogue.link(session, i);
			if (l != null && m.stripeBytes[i] > 0 && (m.fenced & 1 << i) == 0) {
				m.fenced |= 1 << i;
				l.send(m.fence(i, true));
			}
		}
		if (m.clean && !m.reported && !m.aborted && !m.isTerminal() && intact(session)) {
			m.mustSucceed = true;
		}
		m.reported = true;
		control.send(m.success(true));
		settle();
		check();
	}

	private void sendQuiet(RoomModel m, RoomModel.Write w, RogueLink link) {
		if ((m.fenced & 1 << w.stripe()) != 0 || m.reported) {
			m.clean = false;
		}
		countGranted(m, w);
		m.tally(w);
		link.data(w.header(), w.srcAddress(), w.srcStride());
	}

	/** The rogue sends a frame naming a room it was not asked for: another rank's room, or one nobody opened. */
	public void foreign(Foreign kind, int pick, boolean known, int stripe) {
		RoguePrefillPeer.Session s = rogue.current();
		RogueLink l = s == null ? null : rogue.link(s, Math.floorMod(stripe, s.width()));
		if (s == null || l == null) {
			return;
		}
		RoomModel target = known ? pick(pick, r -> !r.rogue) : null;
		long room = target != null ? target.id : 1_000_000 + Math.floorMod(pick, 1000);
		int page = target != null ? target.pages[0] : 0;
		KVMessage msg = switch (kind) {
			case DATA -> null;
			case FENCE -> new KVMessage.Fence(room, itemLen, KVMessage.NO_CHECKSUM);
			case SUCCESS -> new KVMessage.Status(room, KVPoll.SUCCESS, 0, "", itemLen, KVMessage.NO_CHECKSUM);
			case FAILED -> KVMessage.Status.failed(room, 0, FailureCause.PEER_FAILED, "the rogue fails room " + room,
					0);
			case ABORT_ACK -> new KVMessage.AbortAck(room);
		};
		step("rogue sends " + (msg == null ? "data" : msg) + " for " + (target == null ? "unknown room " + room
				: target) + " on " + l);
		if (target != null) {
			doom(s);
		}
		if (msg == null) {
			l.data(new DataHeader(room, RegionKind.KV, 0, (long) page * itemLen, itemLen, 0, 1), kv(0).address(), 0);
		}
		else {
			l.send(msg);
		}
		settle();
		check();
	}

	/** The rogue sends a control message prefill never sends, or never then. */
	public void stray(Stray kind, int pick, int stripe) {
		RoguePrefillPeer.Session s = rogue.current();
		RogueLink l = s == null ? null : rogue.link(s, Math.floorMod(stripe, s.width()));
		if (s == null || l == null) {
			return;
		}
		RoomModel m = asked(pick);
		long room = m != null ? m.id : 1;
		KVMessage msg = switch (kind) {
			case HELLO_ACK -> new KVMessage.HelloAck(io.kvferry.spi.PeerLayout.of(rogueMem.kvArgs(),
					ParallelLayout.SINGLE));
			case JOINED -> new KVMessage.Joined(Math.floorMod(pick, 8));
			case REJECT -> new KVMessage.Reject("the rogue rejects, late");
			case DRAINING -> new KVMessage.Draining("the rogue drains");
			case STATUS_ON_DATA_STRIPE -> m == null ? null : m.success(true);
			case ABORT_ACK -> new KVMessage.AbortAck(room);
			case RENEW -> new KVMessage.Renew(new long[] { room });
			case TRANSFER_REQUEST -> new KVMessage.TransferRequest(room, new int[] { 0 }, -1, new int[0], 1, false);
			case HELLO -> new KVMessage.Hello(KVMessage.PROTOCOL_VERSION, io.kvferry.spi.PeerLayout.of(
					rogueMem.kvArgs(), ParallelLayout.SINGLE));
			case JOIN -> new KVMessage.Join(pick, 1);
		};
		if (msg == null) {
			return;
		}
		if (kind == Stray.STATUS_ON_DATA_STRIPE) {
			RogueLink data = rogue.link(s, s.width() - 1);
			if (data == null) {
				return;
			}
			l = data;
		}
		if (m != null && kind == Stray.STATUS_ON_DATA_STRIPE) {
			m.clean = false;
		}
		step("rogue sends stray " + msg + " on " + l);
		doom(s);
		l.send(msg);
		settle();
		check();
	}

	/** The rogue writes a frame no peer writes (where its transport carries bytes). */
	public void forge(Forgery forgery, int pick, int stripe) {
		RoguePrefillPeer.Session s = rogue.current();
		RogueLink l = s == null ? null : rogue.link(s, Math.floorMod(stripe, s.width()));
		if (s == null || l == null) {
			return;
		}
		RoomModel m = asked(pick);
		if (l.forge(forgery, m == null ? 1 : m.id)) {
			step("rogue forges " + forgery + " on " + l);
			doom(s);
			if (m != null) {
				m.clean = false;
			}
			settle();
			check();
		}
	}

	// ---- invariants -----------------------------------------------------------------------------------------------

	/** Checks what must hold at any moment; throws naming every violation and the steps that led there. */
	public void check() {
		long now = now();
		for (RoomModel m : rooms) {
			KVPoll s = m.receiver.poll();
			if (setup.ledger() != null && s != null && !s.isTerminal()) {
				long held = setup.ledger().retainedBytes(decode, m.id);
				long items = (long) kvBuffers * m.pages.length + (m.aux >= 0 ? 1 : 0);
				long bound = LEDGER_PER_BUFFER * (kvBuffers + 1) + LEDGER_PER_ITEM * items;
				if (held > bound) {
					violations.add(m + "'s ledger holds " + held + " heap bytes, more than " + bound + " for its "
							+ items + " items");
				}
			}
			if (virtual()) {
				checkTimes(m, s, now);
			}
			if (m.verified && !m.recycled) {
				String wrong = decodeMem.verify(m.id, m.pages, m.aux, new int[0]);
				if (wrong != null) {
					violations.add(m + " succeeded, but its pages changed since: " + wrong);
					m.verified = false;
				}
			}
			if (virtual() && m.mustSucceed && !m.aborted && s != KVPoll.SUCCESS) {
				violations.add(m + " was finished honestly while every byte it was sent was granted and sent once, but"
						+ " did not succeed: " + failure(m));
				m.mustSucceed = false;
			}
		}
		int[] free = freePages.stream().mapToInt(Integer::intValue).toArray();
		if (!decodeMem.isZero(free)) {
			violations.add("a page no room holds was written: free pages " + Arrays.toString(free));
		}
		if (!violations.isEmpty()) {
			throw new AssertionError(String.join("\n", violations) + "\nsteps:\n  " + String.join("\n  ", steps));
		}
	}

	private void checkTimes(RoomModel m, @Nullable KVPoll s, long now) {
		long timeout = setup.stateTimeout().toNanos();
		if (s != null && !s.isTerminal() && now - m.since > timeout) {
			violations.add(m + " stayed in " + s + " for " + Duration.ofNanos(now - m.since).toMillis() + " ms, past "
					+ "its timeout of " + setup.stateTimeout().toMillis() + " ms");
		}
		long release = setup.handshakeTimeout().toNanos();
		if (s == KVPoll.FAILED && !m.released && now - m.since > release) {
			violations.add(m + " failed " + Duration.ofNanos(now - m.since).toMillis() + " ms ago and its pages are "
					+ "not released (bound: the handshake timeout, " + setup.handshakeTimeout().toMillis() + " ms)");
		}
	}

	private static String failure(RoomModel m) {
		Throwable e = m.error;
		return e == null ? String.valueOf(m.receiver.poll()) : String.valueOf(e);
	}

	/**
	 * Ends the run: the good rooms still held are sent, time passes past every timeout, and then every room must have
	 * ended and released its pages, the good ones byte-exact, and a fresh room of the good rank must still succeed.
	 */
	public void end() {
		step("end");
		for (RoomModel m : rooms) {
			if (!m.rogue && !m.sent && m.sender != null && !m.isTerminal()) {
				m.sent = true;
				m.sender.send(m.pages, new int[0]);
			}
		}
		settle();
		Duration past = setup.stateTimeout().plus(setup.handshakeTimeout()).multipliedBy(2);
		if (vts != null) {
			vts.advanceTimeBy(past);
		}
		else {
			// On real time a run does not wait for every timeout: the rooms that must succeed get their time, then
			// decode's engine gives up the rogue's rooms still live, which must then end within the abort's bound.
			List<Mono<Void>> due = new ArrayList<>();
			for (RoomModel m : rooms) {
				if (!m.rogue || m.mustSucceed) {
					due.add(m.done);
				}
			}
			Mono.when(due).timeout(T, Mono.empty()).block();
			// Acknowledged at once, so that the rooms end without waiting out decode's bound on an abort.
			rogue.ackAborts(true);
			for (RoomModel m : rooms) {
				if (m.rogue && !m.isTerminal() && !m.mustSucceed) {
					m.aborted = true;
					m.receiver.abort("the run ends");
				}
			}
		}
		List<Mono<Void>> ends = new ArrayList<>();
		for (RoomModel m : rooms) {
			ends.add(m.done);
		}
		Duration wait = vts != null ? T : setup.handshakeTimeout().plus(T);
		try {
			Mono.when(ends).block(wait);
		}
		catch (RuntimeException e) {
			List<String> live = new ArrayList<>();
			for (RoomModel m : rooms) {
				if (!m.settled) {
					live.add(m.toString());
				}
			}
			violations.add("rooms not ended and released within " + wait.toMillis() + " ms after every timeout: "
					+ live);
		}
		for (RoomModel m : rooms) {
			if (!m.rogue && !m.aborted && m.receiver.poll() != KVPoll.SUCCESS && !timedOutAlready(m)) {
				violations.add(m + ", asked of the well-behaved prefill rank, ended " + m.receiver.poll() + ": "
						+ failure(m));
			}
			if (m.mustSucceed && !m.aborted && m.receiver.poll() != KVPoll.SUCCESS) {
				violations.add(m + " was finished honestly while clean, but ended " + failure(m));
			}
		}
		recycleAll();
		// The good rank still serves decode, byte-exact.
		int before = rooms.size();
		openGood(1, true);
		if (rooms.size() > before) {
			RoomModel last = rooms.get(before);
			last.sent = true;
			Objects.requireNonNull(last.sender, "sender").send(last.pages, new int[0]);
			settle();
			try {
				last.receiver.completion().block(T);
			}
			catch (RuntimeException e) {
				violations.add("a fresh room of the well-behaved rank failed after the run: " + e);
			}
		}
		check();
	}

	private static boolean timedOutAlready(RoomModel m) {
		Throwable e = m.error;
		return e != null && timedOut(m, e);
	}

	// ---- pages ----------------------------------------------------------------------------------------------------

	private int @Nullable [] takePages(int n) {
		if (freePages.size() < n) {
			recycleAll();
		}
		if (freePages.size() < n) {
			return null;
		}
		int[] pages = new int[n];
		for (int i = 0; i < n; i++) {
			pages[i] = freePages.poll();
		}
		return pages;
	}

	/** Takes back the pages of every room whose pages were released; a succeeded room's must still hold its bytes. */
	private void recycleAll() {
		for (RoomModel m : rooms) {
			if (m.recycled || !m.settled) {
				continue;
			}
			if (m.verified) {
				String wrong = decodeMem.verify(m.id, m.pages, m.aux, new int[0]);
				if (wrong != null) {
					violations.add(m + " succeeded, but its pages changed before they were reused: " + wrong);
				}
			}
			m.recycled = true;
			zero(m.pages, m.aux);
			for (int p : m.pages) {
				freePages.add(p);
			}
			if (m.aux >= 0) {
				freeAux.add(m.aux);
			}
		}
	}

	private void zero(int[] pages, int aux) {
		for (MemoryRegion r : decodeMem.kvArgs().kvRegions()) {
			for (int p : pages) {
				io.netty.util.internal.PlatformDependent.setMemory(r.itemAddress(p), r.itemLen(), (byte) 0);
			}
		}
		if (aux >= 0) {
			MemoryRegion r = decodeMem.kvArgs().auxRegions().get(0);
			io.netty.util.internal.PlatformDependent.setMemory(r.itemAddress(aux), r.itemLen(), (byte) 0);
		}
	}

	// ---- helpers --------------------------------------------------------------------------------------------------

	private @Nullable RoomModel pick(int pick, java.util.function.Predicate<RoomModel> filter) {
		List<RoomModel> candidates = new ArrayList<>();
		for (RoomModel m : rooms) {
			if (filter.test(m)) {
				candidates.add(m);
			}
		}
		return candidates.isEmpty() ? null : candidates.get(Math.floorMod(pick, candidates.size()));
	}

	private int ungranted(RoomModel m, int a) {
		int page = Math.floorMod(a, PAGES);
		while (indexOf(m.pages, page) >= 0) {
			page = (page + 1) % PAGES;
		}
		return page;
	}

	private static int indexOf(int[] values, int v) {
		for (int i = 0; i < values.length; i++) {
			if (values[i] == v) {
				return i;
			}
		}
		return -1;
	}

	private void step(String what) {
		steps.add(what);
	}

	/**
	 * @return how each room ended, one line per room ("rogue SUCCESS", "good FAILED protocol", ...), for the
	 *         statistics a property reports
	 */
	public List<String> outcomes() {
		List<String> out = new ArrayList<>();
		for (RoomModel m : rooms) {
			Throwable e = m.error;
			String cause = e instanceof KVTransferException k ? " " + k.failureCause().tag()
					: e != null ? " " + e.getClass().getName() : m.released ? "" : " (not released)";
			out.add((m.rogue ? "rogue " : "good ") + m.receiver.poll() + cause + (m.mustSucceed ? " (finished clean)"
					: ""));
		}
		return out;
	}

	/** @return the steps so far, for a report */
	public List<String> steps() {
		return List.copyOf(steps);
	}

	@Override
	public void close() {
		try {
			decode.dispose();
			good.dispose();
			settle();
			decode.onDispose().block(T);
			good.onDispose().block(T);
			rogueListener.dispose();
		}
		finally {
			Hooks.resetOnErrorDropped();
		}
	}

	@Override
	public String toString() {
		return "rogue prefill world after " + steps.size() + " steps";
	}
}
