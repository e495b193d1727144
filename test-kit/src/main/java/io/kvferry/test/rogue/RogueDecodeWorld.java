package io.kvferry.test.rogue;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;
import java.util.function.Predicate;
import java.util.function.Supplier;

import io.kvferry.DecodeKVManager;
import io.kvferry.FailureCause;
import io.kvferry.HostPort;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVPoll;
import io.kvferry.KVSender;
import io.kvferry.KVTransferException;
import io.kvferry.ParallelLayout;
import io.kvferry.PrefillKVManager;
import io.kvferry.RoomRequest;
import io.kvferry.harness.RankMemory;
import io.kvferry.spi.KVTransport;
import io.kvferry.test.InMemoryBootstrap;
import org.jspecify.annotations.Nullable;
import reactor.core.Disposable;
import reactor.core.publisher.Hooks;
import reactor.core.publisher.Mono;
import reactor.test.scheduler.VirtualTimeScheduler;

/**
 * A prefill rank of the real engine serving two decode ranks: a well-behaved one (the real engine) and a rogue
 * ({@link RogueDecodePeer}) that says hello, joins, asks, renews and aborts as a step tells it, with any field. The test
 * plays prefill's engine: it claims the rooms prefill publishes and sends each room's pages from memory filled with
 * the room's pattern. After every step the world checks:
 * <ul>
 * <li>every data frame the rogue got names a room its session asked for and lies inside the pages, aux row and
 * regions it asked for, and none came after prefill acknowledged the room's abort on that connection (the rogue
 * checks as frames arrive);</li>
 * <li>a room the rogue asked for honestly and prefill reported Success of holds the source's bytes in the rogue's
 * pages: prefill read what its engine gave it, nothing else;</li>
 * <li>the well-behaved decode's rooms succeed byte-exact unless the engine gave them up or left them past a
 * timeout, whatever the rogue names (their ids included), and its session stays open;</li>
 * <li>prefill holds no more rooms than its engine claimed plus its bound on unclaimed ones, no room stays in a state
 * past its timeout, and after the last timeout it holds none;</li>
 * <li>no error is dropped by Reactor.</li>
 * </ul>
 */
public final class RogueDecodeWorld implements AutoCloseable {

	/**
	 * @param transports makes prefill's and the good decode's transport (in-memory: the same instance, which the rogue
	 *        dials too)
	 * @param dial opens one connection of the rogue to prefill's endpoint, reporting to the given inbound
	 * @param virtualTime the managers' timer and callback scheduler and the transport's scheduler; null for real time
	 * @param stateTimeout every state's timeout, and how long prefill holds a room no sender claimed
	 * @param leasePeriod prefill's lease on the rooms decode asked for
	 */
	public record Setup(Supplier<KVTransport> transports,
			BiFunction<HostPort, RogueDecodePeer.Inbound, RogueLink> dial, @Nullable VirtualTimeScheduler virtualTime,
			Duration stateTimeout, Duration leasePeriod) {
	}

	/** How the rogue opens a session. */
	public enum Hello {
		HONEST, OTHER_VERSION, OTHER_DTYPE, FEWER_LAYERS, TOO_MANY_STRIPES, TWICE, REQUEST_FIRST, JOIN_FIRST
	}

	/** How the rogue joins a further stripe. */
	public enum Join {
		NEXT, WRONG_TOKEN, INDEX_ZERO, INDEX_PAST_WIDTH, SAME_INDEX_AGAIN, ON_CONTROL_STRIPE
	}

	/** What the rogue asks for. */
	public enum Ask {
		HONEST, SAME_ROOM_AGAIN, OTHER_DECODES_ROOM, OWN_ROOM_ON_OTHER_SESSION, PAGE_PAST_END, NEGATIVE_PAGE,
		DUPLICATE_PAGES, MORE_PAGES_THAN_REGISTERED, AUX_PAST_END, STATE_SLOTS, TWO_DESTINATIONS, DUMMY,
		PREFIX_OF_A_PAGE, PREFIX_NOT_A_PAGE, ON_DATA_STRIPE, BEFORE_STRIPES_JOINED
	}

	/** Which room the rogue aborts or renews. */
	public enum Target {
		OWN, OTHER_DECODES, UNKNOWN
	}

	/** A message decode never sends, or not then. */
	public enum Stray {
		HELLO_ACK, STATUS, FENCE, JOINED, ABORT_ACK, DRAINING, REJECT
	}

	private static final int PAGES = 64;
	static final int AUX_ROWS = 16;
	static final int ROGUE_PAGES = 128;
	private static final int UNCLAIMED_PER_PEER = 8;
	static final int UNCLAIMED = 16;
	private static final HostPort PREFILL = new HostPort("10.0.0.1", 1);
	static final Duration T = Duration.ofSeconds(20);
	// How long a step on real time waits for prefill to answer a hello (one it refuses may go unanswered).
	static final Duration ANSWER = Duration.ofSeconds(1);

	final RogueDecodeSessions sessions = new RogueDecodeSessions(this);
	final RogueDecodeChecks checks = new RogueDecodeChecks(this);
	final Setup setup;
	final @Nullable VirtualTimeScheduler vts;
	final InMemoryBootstrap bootstrap = new InMemoryBootstrap();
	final RankMemory prefillMem = RankMemory.prefill(RoguePrefillWorld.SHAPE, ParallelLayout.SINGLE, PAGES,
			AUX_ROWS, 0);
	final RankMemory goodMem = RankMemory.decode(RoguePrefillWorld.SHAPE, ParallelLayout.SINGLE, PAGES,
			AUX_ROWS, 0);
	final RankMemory rogueMem = RankMemory.decode(RoguePrefillWorld.SHAPE, ParallelLayout.SINGLE, ROGUE_PAGES,
			AUX_ROWS, 0);
	final PrefillKVManager prefill;
	final DecodeKVManager good;
	final RogueDecodePeer rogue = new RogueDecodePeer(rogueMem.kvArgs());
	final Disposable requests;
	final List<RoomRequest> published = new CopyOnWriteArrayList<>();
	final Map<Long, CompletableFuture<RoomRequest>> publishedById = new ConcurrentHashMap<>();
	final Map<Long, RogueDecodeRoom> rooms = new ConcurrentHashMap<>();
	final List<RogueDecodeRoom> goodRooms = new CopyOnWriteArrayList<>();
	final List<RogueDecodeRoom> rogueRooms = new CopyOnWriteArrayList<>();
	final Deque<Integer> freeSrc = new ArrayDeque<>();
	final Deque<Integer> freeGood = new ArrayDeque<>();
	final Deque<Integer> freeRogue = new ArrayDeque<>();
	final List<String> violations = new CopyOnWriteArrayList<>();
	final List<String> steps = new ArrayList<>();
	long nextRoom = 1;
	int goodConnections = -1;

	public RogueDecodeWorld(Setup setup) {
		this.setup = setup;
		this.vts = setup.virtualTime();
		Hooks.onErrorDropped(e -> violations.add("Reactor dropped an error: " + e));
		for (int p = 0; p < PAGES; p++) {
			freeSrc.add(p);
			freeGood.add(p);
		}
		for (int p = 0; p < ROGUE_PAGES; p++) {
			freeRogue.add(p);
		}
		this.prefill = timed(KVManagerSpec.prefill().kvArgs(prefillMem.kvArgs()).transport(setup.transports().get())
				.bootstrapClient(bootstrap).bootstrapAddress(PREFILL).bindAddress(new HostPort("127.0.0.1", 0))
				.unclaimedRooms(UNCLAIMED_PER_PEER, UNCLAIMED).unclaimedRoomTimeout(setup.stateTimeout())
				.leasePeriod(setup.leasePeriod()).name("prefill")).startNow(T);
		this.good = timed(KVManagerSpec.decode().kvArgs(goodMem.kvArgs()).transport(setup.transports().get())
				.bootstrapClient(bootstrap).stripes(2).checksums(true).name("good-decode")).startNow(T);
		this.requests = prefill.roomRequests().subscribe(q -> {
			published.add(q);
			whenPublished(q.room()).complete(q);
		});
	}

	<S extends KVManagerSpec<S, ?>> S timed(S spec) {
		S timed = spec.bootstrapTimeout(setup.stateTimeout()).waitingTimeout(setup.stateTimeout())
				.transferTimeout(setup.stateTimeout());
		return vts == null ? timed : timed.timer(vts).callbackScheduler(vts);
	}

	boolean virtual() {
		return vts != null;
	}

	long now() {
		return vts != null ? vts.now(TimeUnit.NANOSECONDS) : System.nanoTime();
	}

	void settle() {
		if (vts != null) {
			vts.advanceTime();
		}
	}

	// ---- the good decode and prefill's engine ----------------------------------------------------------------------

	/** The good decode opens a room of the prefill rank. */
	public void openGood(int n, boolean withAux) {
		if (freeGood.size() < n) {
			return;
		}
		RogueDecodeRoom r = new RogueDecodeRoom(nextRoom++, true);
		r.pages = take(freeGood, n);
		r.aux = withAux ? Math.floorMod((int) r.id, AUX_ROWS) : -1;
		r.receiver = good.receiver(PREFILL, r.id);
		rooms.put(r.id, r);
		goodRooms.add(r);
		step("the good decode opens " + r);
		RogueDecodeRoom room = r;
		Mono<Void> states = r.receiver.states().doOnNext(s -> {
			if (s == KVPoll.SUCCESS) {
				String wrong = goodMem.verify(room.id, room.pages, room.aux, new int[0]);
				if (wrong != null) {
					violations.add(room + " reached Success with bytes that are not the source's: " + wrong);
				}
				room.verified = true;
			}
		}).then();
		Mono<Void> completion = r.receiver.completion().doOnError(e -> {
			room.error = e;
			if (!room.abortedByEngine && !(e instanceof KVTransferException k
					&& k.failureCause() == FailureCause.TIMEOUT && !room.servedLive)) {
				violations.add(room + ", of the well-behaved decode rank, failed: " + e);
			}
		}).onErrorResume(e -> Mono.empty());
		r.done = Mono.when(states, completion).cache();
		r.done.subscribe();
		r.receiver.sendMetadata(r.pages, r.aux, new int[0]);
		settle();
		if (!virtual()) {
			// The engine's steps act on the rooms prefill published: on real time the request comes a moment later.
			Mono.firstWithSignal(Mono.fromFuture(whenPublished(r.id)), r.done).timeout(ANSWER, Mono.empty())
					.block(T);
		}
		check();
	}

	CompletableFuture<RoomRequest> whenPublished(long room) {
		return publishedById.computeIfAbsent(room, id -> new CompletableFuture<>());
	}

	/** Prefill's engine claims a room prefill published and sends all of its pages. */
	public void serve(int pick) {
		RoomRequest req = pickRequest(pick);
		if (req != null) {
			serve(req);
		}
	}

	void serve(RoomRequest req) {
		RogueDecodeRoom r = rooms.computeIfAbsent(req.room(), id -> new RogueDecodeRoom(id, false));
		int n = req.pageCount();
		if (freeSrc.size() < n) {
			return;
		}
		r.srcPages = take(freeSrc, n);
		r.srcAux = req.auxIndex() >= 0 ? Math.floorMod((int) req.room(), AUX_ROWS) : -1;
		step("prefill's engine serves " + req + " from pages " + Arrays.toString(r.srcPages));
		prefillMem.fill(r.id, r.srcPages, r.srcAux, new int[0]);
		KVSender s = prefill.sender(r.id);
		r.sender = s;
		r.servedLive = r.receiver != null && r.receiver.poll() != null && !r.receiver.poll().isTerminal();
		RogueDecodeRoom room = r;
		s.states().subscribe(st -> {
			room.senderState = st;
			room.since = now();
		});
		s.completion().doFinally(signal -> {
			// Once the room ended on prefill (and its failure reached every decode rank) its pages are free.
			synchronized (this) {
				for (int p : room.srcPages) {
					freeSrc.add(p);
				}
				room.srcPages = new int[0];
			}
		}).onErrorResume(e -> Mono.empty()).subscribe();
		s.init(n, r.srcAux);
		s.send(r.srcPages.clone(), new int[0]);
		settle();
		check();
	}

	/** Prefill's engine gives up a room it claimed. */
	public void abortServed(int pick) {
		RogueDecodeRoom r = pick(pick, x -> x.sender != null && x.senderState != null && !x.senderState.isTerminal());
		if (r == null) {
			return;
		}
		step("prefill's engine aborts " + r);
		r.abortedByEngine = true;
		Objects.requireNonNull(r.sender, "sender").abort("the engine gives up");
		settle();
		check();
	}

	/** @return whether prefill published the room: every decode rank that asks for it did */
	boolean isPublished(long room) {
		for (RoomRequest q : published) {
			if (q.room() == room) {
				return true;
			}
		}
		return false;
	}

	@Nullable RoomRequest pickRequest(int pick) {
		List<RoomRequest> open = new ArrayList<>();
		for (RoomRequest q : published) {
			RogueDecodeRoom r = rooms.get(q.room());
			if ((r == null || r.sender == null) && !q.dummy()) {
				open.add(q);
			}
		}
		return open.isEmpty() ? null : open.get(Math.floorMod(pick, open.size()));
	}

	/** Time passes (virtual time only). */
	public void advance(Duration d) {
		if (vts == null) {
			return;
		}
		step("advance " + d.toMillis() + " ms");
		vts.advanceTimeBy(d);
		check();
	}

	// ---- the rogue ------------------------------------------------------------------------------------------------

	/** The rogue dials prefill and opens a session. */
	public void connect(int width, Hello kind, boolean checksums) {
		sessions.connect(width, kind, checksums);
	}

	/** The rogue dials a further stripe of one of its sessions and joins it, as told. */
	public void join(int pick, Join kind) {
		sessions.join(pick, kind);
	}

	/** The rogue asks for a room, as told. */
	public void ask(int pick, Ask kind, int n, int a) {
		sessions.ask(pick, kind, n, a);
	}

	/** The rogue aborts a room, as told. */
	public void abort(int pick, Target target, int code) {
		sessions.abort(pick, target, code);
	}

	/** The rogue renews rooms, as told. */
	public void renew(int pick, Target target, int many) {
		sessions.renew(pick, target, many);
	}

	/** The rogue sends a message decode never sends, on any of its stripes. */
	public void stray(int pick, Stray kind, int stripe) {
		sessions.stray(pick, kind, stripe);
	}

	/** The rogue sends a data frame to prefill, which never receives KV. */
	public void data(int pick, int stripe) {
		sessions.data(pick, stripe);
	}

	/** The rogue closes one of its connections. */
	public void close(int pick, int stripe) {
		sessions.close(pick, stripe);
	}

	// ---- invariants -----------------------------------------------------------------------------------------------

	/** Checks what must hold at any moment; throws naming every violation and the steps that led there. */
	public void check() {
		checks.check();
	}

	/**
	 * Ends the run: every request prefill published is served, time passes past every timeout, and then prefill must
	 * hold no room, the good decode's rooms must have succeeded, and a fresh good room must still succeed.
	 */
	public void end() {
		checks.end();
	}

	/** @return how the rooms ended, one line per room, for the statistics a property reports */
	public List<String> outcomes() {
		return checks.outcomes();
	}

	// ---- helpers --------------------------------------------------------------------------------------------------

	static int[] take(Deque<Integer> free, int n) {
		int[] pages = new int[n];
		for (int i = 0; i < n; i++) {
			pages[i] = free.poll();
		}
		return pages;
	}

	/** @return a session's control stripe, which it has from its opening */
	RogueLink control(RogueDecodePeer.Session s) {
		return Objects.requireNonNull(rogue.link(s, 0), "control stripe");
	}

	@Nullable RogueDecodeRoom pick(int pick, Predicate<RogueDecodeRoom> filter) {
		List<RogueDecodeRoom> candidates = new ArrayList<>();
		for (RogueDecodeRoom r : rooms.values()) {
			if (filter.test(r)) {
				candidates.add(r);
			}
		}
		candidates.sort((x, y) -> Long.compare(x.id, y.id));
		return candidates.isEmpty() ? null : candidates.get(Math.floorMod(pick, candidates.size()));
	}

	void step(String what) {
		steps.add(what);
	}

	@Override
	public void close() {
		try {
			requests.dispose();
			good.dispose();
			prefill.dispose();
			settle();
			good.onDispose().block(T);
			prefill.onDispose().block(T);
			for (RogueDecodePeer.Session s : rogue.sessions()) {
				for (int i = 0; i < s.width(); i++) {
					RogueLink l = rogue.link(s, i);
					if (l != null && l.isOpen()) {
						l.close();
					}
				}
			}
			settle();
		}
		finally {
			Hooks.resetOnErrorDropped();
		}
	}

	@Override
	public String toString() {
		return "rogue decode world after " + steps.size() + " steps";
	}
}
