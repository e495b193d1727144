package io.kvferry.test.rogue;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import io.kvferry.DecodeKVManager;
import io.kvferry.HostPort;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVTransferException;
import io.kvferry.MemoryRegion;
import io.kvferry.ParallelLayout;
import io.kvferry.PrefillKVManager;
import io.kvferry.bootstrap.PrefillRegistration;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.spi.KVTransport;
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
		SCATTER_OVERLAPPING, SCATTER_AGAIN, UNGRANTED_PAGE, OTHER_ROOMS_PAGE, NO_SUCH_REGION, PAST_REGION_END, NEGATIVE_OFFSET, OVERFLOW, EMPTY,
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
	static final int SRC_PAGES = 512;
	private static final int STRIPES = 2;
	private static final HostPort GOOD = new HostPort("10.0.0.1", 1);
	private static final HostPort ROGUE = new HostPort("10.0.0.2", 1);
	static final Duration T = Duration.ofSeconds(20);
	// How long a step on real time waits for decode's request to reach the rogue (a handshake the rogue does not
	// answer takes decode's handshake timeout).
	private static final Duration ASKED = Duration.ofSeconds(1);
	// A room's ledger: a few words per buffer, and per item at most a bit, a count, and the runs of an item written in
	// parts (the decode layout allows 4 tokens x 2 heads + 33 runs of two ints each).
	static final long LEDGER_PER_BUFFER = 256;
	static final long LEDGER_PER_ITEM = 512;
	// The runs of equally written bytes decode keeps per item written in pieces, as its security page documents: one
	// per head of each token of a page and 33 more; two per prefill rank in an aux row and 33 more.
	static final int KV_RUNS = SHAPE.pageSize() * SHAPE.kvHeads() + 1 + 32;
	static final int AUX_RUNS = 2 + 1 + 32;

	final Setup setup;
	final @Nullable VirtualTimeScheduler vts;
	final InMemoryBootstrap bootstrap = new InMemoryBootstrap();
	final RoguePrefillWrites writes = new RoguePrefillWrites(this);
	final RoguePrefillReports reports = new RoguePrefillReports(this);
	final RoguePrefillChecks checks = new RoguePrefillChecks(this);
	final RankMemory decodeMem = RankMemory.decode(SHAPE, ParallelLayout.SINGLE, PAGES, AUX_ROWS, 0);
	final RankMemory goodMem = RankMemory.prefill(SHAPE, ParallelLayout.SINGLE, PAGES, AUX_ROWS, 0);
	final RankMemory rogueMem = RankMemory.prefill(SHAPE, ParallelLayout.SINGLE, SRC_PAGES, SRC_PAGES / 4, 0);
	final int itemLen = rogueMem.kvArgs().kvRegions().get(0).itemLen();
	final int auxLen = rogueMem.kvArgs().auxRegions().get(0).itemLen();
	final int kvBuffers = rogueMem.kvArgs().kvRegions().size();
	final RoguePrefillPeer rogue;
	final KVTransport.Listener rogueListener;
	final PrefillKVManager good;
	final DecodeKVManager decode;
	final List<RoomModel> rooms = new CopyOnWriteArrayList<>();
	final Deque<Integer> freePages = new ArrayDeque<>();
	final Deque<Integer> freeAux = new ArrayDeque<>();
	final List<String> violations = new CopyOnWriteArrayList<>();
	final List<String> steps = new ArrayList<>();
	// Sessions the rogue broke for good (a closed stripe, a frame decode closes the connection for, silence): their
	// rooms fail with them, so none of them is expected to succeed.
	final java.util.Set<RoguePrefillPeer.Session> doomed = java.util.concurrent.ConcurrentHashMap.newKeySet();
	long nextRoom = 1;
	int nextSrcPage;
	int nextSrcAux;

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

	<S extends KVManagerSpec<S, ?>> S timed(S spec) {
		S timed = spec.bootstrapTimeout(setup.stateTimeout()).waitingTimeout(setup.stateTimeout())
				.transferTimeout(setup.stateTimeout());
		return vts == null ? timed : timed.timer(vts).callbackScheduler(vts);
	}

	// ---- the clock ------------------------------------------------------------------------------------------------

	long now() {
		return vts != null ? vts.now(TimeUnit.NANOSECONDS) : System.nanoTime();
	}

	boolean virtual() {
		return vts != null;
	}

	/** Runs what is due now (virtual time); nothing on real time, where the transport's threads do. */
	void settle() {
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

	void open(boolean rogueRoom, int n, boolean withAux) {
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
		checks.watch(m);
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
	@Nullable RoomModel asked(int pick) {
		return pick(pick, r -> r.rogue && rogue.asked(r.id) != null);
	}

	/**
	 * The rogue writes bytes of one of its rooms.
	 *
	 * @param buffer, position, a, b pick the buffer, the page position and the bytes (each reduced to what the room
	 *        has)
	 */
	public void write(int pick, Write kind, int stripe, int buffer, int position, int a, int b) {
		writes.write(pick, kind, stripe, buffer, position, a, b);
	}

	/**
	 * The rogue broke the session for good. On real time a room of it finished cleanly may now fail before decode
	 * judged its Success (the connection closes first), so it is no longer expected to succeed.
	 */
	void doom(RoguePrefillPeer.Session s) {
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
	void touched(RoomModel m) {
		if (!virtual()) {
			m.mustSucceed = false;
		}
	}

	/** The rogue reports on one of its rooms. */
	public void report(int pick, Report kind, int stripe, int arg) {
		reports.report(pick, kind, stripe, arg);
	}

	/**
	 * The rogue finishes a room as an honest rank would: every granted byte not written yet, once, on one stripe, then
	 * each stripe's fence and the Success. A room that was clean must then succeed.
	 */
	public void finish(int pick, int stripe) {
		reports.finish(pick, stripe);
	}

	/** The rogue sends a frame naming a room it was not asked for: another rank's room, or one nobody opened. */
	public void foreign(Foreign kind, int pick, boolean known, int stripe) {
		reports.foreign(kind, pick, known, stripe);
	}

	/** The rogue sends a control message prefill never sends, or never then. */
	public void stray(Stray kind, int pick, int stripe) {
		reports.stray(kind, pick, stripe);
	}

	/** The rogue writes a frame no peer writes (where its transport carries bytes). */
	public void forge(Forgery forgery, int pick, int stripe) {
		reports.forge(forgery, pick, stripe);
	}

	// ---- invariants -----------------------------------------------------------------------------------------------

	/** Checks what must hold at any moment; throws naming every violation and the steps that led there. */
	public void check() {
		checks.check();
	}

	/**
	 * Ends the run: the good rooms still held are sent, time passes past every timeout, and then every room must have
	 * ended and released its pages, the good ones byte-exact, and a fresh room of the good rank must still succeed.
	 */
	public void end() {
		checks.end();
	}

	// ---- pages ----------------------------------------------------------------------------------------------------

	int @Nullable [] takePages(int n) {
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
	void recycleAll() {
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

	void zero(int[] pages, int aux) {
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

	@Nullable RoomModel pick(int pick, java.util.function.Predicate<RoomModel> filter) {
		List<RoomModel> candidates = new ArrayList<>();
		for (RoomModel m : rooms) {
			if (filter.test(m)) {
				candidates.add(m);
			}
		}
		return candidates.isEmpty() ? null : candidates.get(Math.floorMod(pick, candidates.size()));
	}

	int ungranted(RoomModel m, int a) {
		int page = Math.floorMod(a, PAGES);
		while (indexOf(m.pages, page) >= 0) {
			page = (page + 1) % PAGES;
		}
		return page;
	}

	static int indexOf(int[] values, int v) {
		for (int i = 0; i < values.length; i++) {
			if (values[i] == v) {
				return i;
			}
		}
		return -1;
	}

	void step(String what) {
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
