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
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.KVTransferException;
import io.kvferry.ParallelLayout;
import io.kvferry.PrefillKVManager;
import io.kvferry.RoomRequest;
import io.kvferry.harness.RankMemory;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.FailureCodes;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.KVTransport;
import io.kvferry.spi.PeerLayout;
import io.kvferry.spi.RegionKind;
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
	private static final int AUX_ROWS = 16;
	private static final int ROGUE_PAGES = 128;
	private static final int UNCLAIMED_PER_PEER = 8;
	private static final int UNCLAIMED = 16;
	private static final HostPort PREFILL = new HostPort("10.0.0.1", 1);
	private static final Duration T = Duration.ofSeconds(20);
	// How long a step on real time waits for prefill to answer a hello (one it refuses may go unanswered).
	private static final Duration ANSWER = Duration.ofSeconds(1);

	/** A room of either decode rank, as prefill's engine and the test see it. */
	private static final class Room {
		final long id;
		final boolean good;
		@Nullable KVReceiver receiver;
		int[] pages = new int[0];
		int aux = -1;
		// What the engine claimed for it.
		@Nullable KVSender sender;
		int[] srcPages = new int[0];
		int srcAux = -1;
		boolean abortedByEngine;
		// The engine served it while its receiver was live (a good room only times out when it was not).
		boolean servedLive;
		volatile @Nullable Throwable error;
		volatile boolean verified;
		volatile long since;
		volatile @Nullable KVPoll senderState;
		// Rogue rooms: the session that asked honestly for exclusive pages, whose bytes the test then checks.
		RogueDecodePeer.@Nullable Session honestly;
		Mono<Void> done = Mono.empty();

		Room(long id, boolean good) {
			this.id = id;
			this.good = good;
		}

		@Override
		public String toString() {
			return (good ? "good" : "rogue") + " room " + id + " (pages " + Arrays.toString(pages) + ", aux " + aux
					+ ")";
		}
	}

	private final Setup setup;
	private final @Nullable VirtualTimeScheduler vts;
	private final InMemoryBootstrap bootstrap = new InMemoryBootstrap();
	private final RankMemory prefillMem = RankMemory.prefill(RoguePrefillWorld.SHAPE, ParallelLayout.SINGLE, PAGES,
			AUX_ROWS, 0);
	private final RankMemory goodMem = RankMemory.decode(RoguePrefillWorld.SHAPE, ParallelLayout.SINGLE, PAGES,
			AUX_ROWS, 0);
	private final RankMemory rogueMem = RankMemory.decode(RoguePrefillWorld.SHAPE, ParallelLayout.SINGLE, ROGUE_PAGES,
			AUX_ROWS, 0);
	private final PrefillKVManager prefill;
	private final DecodeKVManager good;
	private final RogueDecodePeer rogue = new RogueDecodePeer(rogueMem.kvArgs());
	private final Disposable requests;
	private final List<RoomRequest> published = new CopyOnWriteArrayList<>();
	private final Map<Long, CompletableFuture<RoomRequest>> publishedById = new ConcurrentHashMap<>();
	private final Map<Long, Room> rooms = new ConcurrentHashMap<>();
	private final List<Room> goodRooms = new CopyOnWriteArrayList<>();
	private final List<Room> rogueRooms = new CopyOnWriteArrayList<>();
	private final Deque<Integer> freeSrc = new ArrayDeque<>();
	private final Deque<Integer> freeGood = new ArrayDeque<>();
	private final Deque<Integer> freeRogue = new ArrayDeque<>();
	private final List<String> violations = new CopyOnWriteArrayList<>();
	private final List<String> steps = new ArrayList<>();
	private long nextRoom = 1;
	private int goodConnections = -1;

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

	private <S extends KVManagerSpec<S, ?>> S timed(S spec) {
		S timed = spec.bootstrapTimeout(setup.stateTimeout()).waitingTimeout(setup.stateTimeout())
				.transferTimeout(setup.stateTimeout());
		return vts == null ? timed : timed.timer(vts).callbackScheduler(vts);
	}

	private boolean virtual() {
		return vts != null;
	}

	private long now() {
		return vts != null ? vts.now(TimeUnit.NANOSECONDS) : System.nanoTime();
	}

	private void settle() {
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
		Room r = new Room(nextRoom++, true);
		r.pages = take(freeGood, n);
		r.aux = withAux ? Math.floorMod((int) r.id, AUX_ROWS) : -1;
		r.receiver = good.receiver(PREFILL, r.id);
		rooms.put(r.id, r);
		goodRooms.add(r);
		step("the good decode opens " + r);
		Room room = r;
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

	private CompletableFuture<RoomRequest> whenPublished(long room) {
		return publishedById.computeIfAbsent(room, id -> new CompletableFuture<>());
	}

	/** Prefill's engine claims a room prefill published and sends all of its pages. */
	public void serve(int pick) {
		RoomRequest req = pickRequest(pick);
		if (req != null) {
			serve(req);
		}
	}

	private void serve(RoomRequest req) {
		Room r = rooms.computeIfAbsent(req.room(), id -> new Room(id, false));
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
		Room room = r;
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
		Room r = pick(pick, x -> x.sender != null && x.senderState != null && !x.senderState.isTerminal());
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
	private boolean isPublished(long room) {
		for (RoomRequest q : published) {
			if (q.room() == room) {
				return true;
			}
		}
		return false;
	}

	private @Nullable RoomRequest pickRequest(int pick) {
		List<RoomRequest> open = new ArrayList<>();
		for (RoomRequest q : published) {
			Room r = rooms.get(q.room());
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

	private RogueLink dial(RogueDecodePeer.Inbound in) {
		return setup.dial().apply(prefill.endpoint(), in);
	}

	/** The rogue dials prefill and opens a session. */
	public void connect(int width, Hello kind, boolean checksums) {
		int w = kind == Hello.TOO_MANY_STRIPES ? 9 : width;
		RogueDecodePeer.Session s = rogue.open(this::dial, w);
		RogueLink l = control(s);
		step("the rogue opens " + s + " with hello " + kind);
		PeerLayout layout = PeerLayout.of(rogueMem.kvArgs(), ParallelLayout.SINGLE);
		KVMessage.Hello honest = new KVMessage.Hello(KVMessage.PROTOCOL_VERSION, layout, checksums, w, 7);
		switch (kind) {
			case OTHER_VERSION -> l.send(new KVMessage.Hello(KVMessage.PROTOCOL_VERSION - 1, layout, checksums, w));
			case OTHER_DTYPE -> l.send(new KVMessage.Hello(KVMessage.PROTOCOL_VERSION, new PeerLayout(
					layout.engineRank(), layout.parallel(), layout.pageSize(), layout.mla(), "float8",
					layout.kvHeadNum(), layout.totalKvHeadNum(), layout.startLayer(), layout.draftLayers(),
					layout.kv(), layout.aux(), layout.state()), checksums, w));
			case FEWER_LAYERS -> l.send(new KVMessage.Hello(KVMessage.PROTOCOL_VERSION, new PeerLayout(
					layout.engineRank(), layout.parallel(), layout.pageSize(), layout.mla(), layout.dtype(),
					layout.kvHeadNum(), layout.totalKvHeadNum(), layout.startLayer(), layout.draftLayers(),
					List.of(layout.kv().get(0), layout.kv().get(2)), layout.aux(), layout.state()), checksums, w));
			case TWICE -> {
				l.send(honest);
				l.send(honest);
			}
			case REQUEST_FIRST -> l.send(new KVMessage.TransferRequest(nextRoom++, new int[] { 0 }, -1, new int[0], 1,
					false));
			case JOIN_FIRST -> l.send(new KVMessage.Join(1, 1));
			default -> l.send(honest);
		}
		settle();
		if (!virtual()) {
			// The steps after act on an acknowledged session: on real time the answer comes a moment later.
			awaitToken(s);
		}
		check();
	}

	private void awaitToken(RogueDecodePeer.Session s) {
		Mono.fromFuture(rogue.answered(s)).timeout(ANSWER, Mono.empty()).block(T);
	}

	/** The rogue dials a further stripe of one of its sessions and joins it, as told. */
	public void join(int pick, Join kind) {
		RogueDecodePeer.Session s = session(pick);
		if (s == null) {
			return;
		}
		long token = rogue.token(s);
		int next = 1;
		while (next < s.width() && rogue.link(s, next) != null) {
			next++;
		}
		int index = switch (kind) {
			case NEXT, WRONG_TOKEN, ON_CONTROL_STRIPE -> next;
			case INDEX_ZERO -> 0;
			case INDEX_PAST_WIDTH -> s.width();
			case SAME_INDEX_AGAIN -> Math.max(1, next - 1);
		};
		step("the rogue joins " + s + " as stripe " + index + " (" + kind + ")");
		if (kind == Join.ON_CONTROL_STRIPE) {
			control(s).send(new KVMessage.Join(token, index));
		}
		else {
			RogueLink l = Objects.requireNonNull(rogue.dialStripe(this::dial, s, kind == Join.NEXT ? index : -1),
					"dialled stripe");
			l.send(new KVMessage.Join(kind == Join.WRONG_TOKEN ? token + 1 : token, index));
		}
		settle();
		check();
	}

	/** The rogue asks for a room, as told. */
	public void ask(int pick, Ask kind, int n, int a) {
		RogueDecodePeer.Session s = session(pick);
		if (s == null) {
			return;
		}
		RogueLink control = rogue.link(s, 0);
		int pages = 1 + Math.floorMod(n, 4);
		// A new room unless the kind names an existing one: room ids are never reused.
		boolean existing = kind == Ask.SAME_ROOM_AGAIN || kind == Ask.OWN_ROOM_ON_OTHER_SESSION
				|| kind == Ask.OTHER_DECODES_ROOM;
		long room = existing ? -1 : nextRoom++;
		boolean honest = false;
		int[] dst;
		int aux = (a & 1) == 0 ? -1 : Math.floorMod(a, AUX_ROWS);
		int required = 1;
		boolean dummy = false;
		int prefix = 0;
		int[] state = new int[0];
		RogueLink on = control;
		switch (kind) {
			case HONEST, ON_DATA_STRIPE, BEFORE_STRIPES_JOINED -> {
				if (freeRogue.size() < pages) {
					return;
				}
				dst = take(freeRogue, pages);
				honest = kind == Ask.HONEST;
				if (kind == Ask.ON_DATA_STRIPE) {
					on = rogue.link(s, s.width() - 1);
				}
			}
			case SAME_ROOM_AGAIN, OWN_ROOM_ON_OTHER_SESSION -> {
				Room mine = pick(a, x -> !x.good && x.pages.length > 0);
				if (mine == null) {
					return;
				}
				room = mine.id;
				dst = mine.pages.clone();
			}
			case OTHER_DECODES_ROOM -> {
				// Only a room prefill published for the good decode: one the rogue asks first is the rogue's.
				Room theirs = pick(a, x -> x.good && isPublished(x.id));
				if (theirs == null) {
					return;
				}
				room = theirs.id;
				dst = new int[] { Math.floorMod(a, ROGUE_PAGES) };
			}
			case PAGE_PAST_END -> dst = new int[] { ROGUE_PAGES + Math.floorMod(a, 1000) };
			case NEGATIVE_PAGE -> dst = new int[] { -1 - Math.floorMod(a, 1000) };
			case DUPLICATE_PAGES -> dst = new int[] { Math.floorMod(a, ROGUE_PAGES), Math.floorMod(a, ROGUE_PAGES) };
			case MORE_PAGES_THAN_REGISTERED -> {
				dst = new int[ROGUE_PAGES + 1];
				for (int i = 0; i < dst.length; i++) {
					dst[i] = i % ROGUE_PAGES;
				}
			}
			case AUX_PAST_END -> {
				dst = new int[] { Math.floorMod(a, ROGUE_PAGES) };
				aux = AUX_ROWS + Math.floorMod(a, 100);
			}
			case STATE_SLOTS -> {
				dst = new int[] { Math.floorMod(a, ROGUE_PAGES) };
				state = new int[] { 0, 1 };
			}
			case TWO_DESTINATIONS -> {
				dst = new int[] { Math.floorMod(a, ROGUE_PAGES) };
				required = 2;
			}
			case DUMMY -> {
				dst = new int[0];
				dummy = true;
			}
			case PREFIX_OF_A_PAGE, PREFIX_NOT_A_PAGE -> {
				dst = new int[] { Math.floorMod(a, ROGUE_PAGES) };
				prefix = kind == Ask.PREFIX_OF_A_PAGE ? RoguePrefillWorld.SHAPE.pageSize() : 1;
			}
			default -> throw new IllegalStateException(kind.toString());
		}
		if (kind == Ask.OWN_ROOM_ON_OTHER_SESSION) {
			RogueDecodePeer.Session other = session(a + 1);
			if (other == null || other == s) {
				return;
			}
			s = other;
			on = rogue.link(s, 0);
		}
		if (on == null) {
			return;
		}
		KVMessage.TransferRequest req = new KVMessage.TransferRequest(room, dst, aux, state, required, dummy, "",
				prefix, new int[0]);
		Room r = rooms.computeIfAbsent(room, id -> new Room(id, false));
		if (!r.good && r.pages.length == 0) {
			r.pages = dst;
			r.aux = aux;
			rogueRooms.add(r);
		}
		if (honest) {
			r.honestly = s;
		}
		step("the rogue asks " + req + " on " + s + " (" + kind + ")");
		rogue.asking(s, req);
		on.send(req);
		settle();
		if (!virtual()) {
			// The engine's steps act on what prefill published: on real time it comes a moment later, if at all.
			Mono.firstWithSignal(Mono.fromFuture(whenPublished(room)), Mono.fromFuture(rogue.whenReported(s, room)))
					.timeout(ANSWER, Mono.empty()).onErrorResume(e -> Mono.empty()).block(T);
		}
		check();
	}

	/** The rogue aborts a room, as told. */
	public void abort(int pick, Target target, int code) {
		RogueDecodePeer.Session s = session(pick);
		long room = room(target, code);
		if (s == null || room < 0) {
			return;
		}
		int c = Math.floorMod(code, FailureCodes.MAX + 1);
		step("the rogue aborts room " + room + " (" + target + ", code " + c + ") on " + s);
		rogue.aborting(s, room);
		control(s).send(new KVMessage.Abort(room, "the rogue aborts", c, Math.floorMod(code, 1 << 20)));
		settle();
		check();
	}

	/** The rogue renews rooms, as told. */
	public void renew(int pick, Target target, int many) {
		RogueDecodePeer.Session s = session(pick);
		if (s == null) {
			return;
		}
		int n = Math.floorMod(many, 3) == 0 ? KVMessage.Renew.MAX_ROOMS : 1 + Math.floorMod(many, 8);
		long[] ids = new long[n];
		for (int i = 0; i < n; i++) {
			long room = room(target, many + i);
			ids[i] = room < 0 ? i : room;
		}
		step("the rogue renews " + n + " rooms (" + target + ") on " + s);
		control(s).send(new KVMessage.Renew(ids));
		settle();
		check();
	}

	/** The rogue sends a message decode never sends, on any of its stripes. */
	public void stray(int pick, Stray kind, int stripe) {
		RogueDecodePeer.Session s = session(pick);
		RogueLink l = s == null ? null : rogue.link(s, Math.floorMod(stripe, s.width()));
		if (l == null) {
			return;
		}
		long room = room(Target.OWN, stripe);
		KVMessage m = switch (kind) {
			case HELLO_ACK -> new KVMessage.HelloAck(PeerLayout.of(rogueMem.kvArgs(), ParallelLayout.SINGLE));
			case STATUS -> new KVMessage.Status(Math.max(room, 0), KVPoll.SUCCESS, 0, "");
			case FENCE -> new KVMessage.Fence(Math.max(room, 0), 0, KVMessage.NO_CHECKSUM);
			case JOINED -> new KVMessage.Joined(1);
			case ABORT_ACK -> new KVMessage.AbortAck(Math.max(room, 0));
			case DRAINING -> new KVMessage.Draining("the rogue drains");
			case REJECT -> new KVMessage.Reject("the rogue rejects");
		};
		step("the rogue sends a stray " + m + " on " + l);
		l.send(m);
		settle();
		check();
	}

	/** The rogue sends a data frame to prefill, which never receives KV. */
	public void data(int pick, int stripe) {
		RogueDecodePeer.Session s = session(pick);
		RogueLink l = s == null ? null : rogue.link(s, Math.floorMod(stripe, s.width()));
		if (l == null) {
			return;
		}
		step("the rogue sends a data frame on " + l);
		l.data(new DataHeader(1, RegionKind.KV, 0, 0, 8, 0, 1), rogueMem.kvArgs().kvRegions().get(0).address(), 0);
		settle();
		check();
	}

	/** The rogue closes one of its connections. */
	public void close(int pick, int stripe) {
		RogueDecodePeer.Session s = session(pick);
		RogueLink l = s == null ? null : rogue.link(s, Math.floorMod(stripe, s.width()));
		if (l == null) {
			return;
		}
		step("the rogue closes " + l);
		l.close();
		settle();
		check();
	}

	private RogueDecodePeer.@Nullable Session session(int pick) {
		List<RogueDecodePeer.Session> all = rogue.sessions();
		List<RogueDecodePeer.Session> open = new ArrayList<>();
		for (RogueDecodePeer.Session s : all) {
			RogueLink l = rogue.link(s, 0);
			if (l != null && l.isOpen()) {
				open.add(s);
			}
		}
		return open.isEmpty() ? null : open.get(Math.floorMod(pick, open.size()));
	}

	/** @return a room id: one of the rogue's, one of the good decode's, or one nobody opened; -1 when none */
	private long room(Target target, int pick) {
		Room r = switch (target) {
			case OWN -> pick(pick, x -> !x.good && x.pages.length > 0);
			case OTHER_DECODES -> pick(pick, x -> x.good && isPublished(x.id));
			case UNKNOWN -> null;
		};
		if (target == Target.UNKNOWN) {
			return 1_000_000 + Math.floorMod(pick, 1000);
		}
		return r == null ? -1 : r.id;
	}

	// ---- invariants -----------------------------------------------------------------------------------------------

	/** Checks what must hold at any moment; throws naming every violation and the steps that led there. */
	public void check() {
		for (String v : rogue.violations()) {
			if (!violations.contains(v)) {
				violations.add(v);
			}
		}
		for (Room r : rooms.values()) {
			if (r.good || r.verified || r.honestly == null || r.sender == null || !rogue.succeeded(r.id)
					|| !fencedAll(r)) {
				continue;
			}
			r.verified = true;
			String wrong = rogueMem.verify(r.id, r.pages, r.aux, new int[0]);
			if (wrong != null) {
				violations.add(r + ", asked by the rogue, was reported Success but its pages do not hold the source's "
						+ "bytes: " + wrong);
			}
		}
		int live = live(prefill);
		int claimed = 0;
		for (Room r : rooms.values()) {
			KVPoll st = r.senderState;
			if (r.sender != null && (st == null || !st.isTerminal())) {
				claimed++;
			}
		}
		// Rooms asked by the good decode are held too until claimed: each of its rooms counts once.
		int bound = UNCLAIMED + claimed + goodRooms.size();
		if (live > bound) {
			violations.add("prefill holds " + live + " live rooms, more than its " + UNCLAIMED + " unclaimed, the "
					+ claimed + " its engine claimed and the good decode's " + goodRooms.size());
		}
		if (virtual()) {
			long timeout = setup.stateTimeout().toNanos();
			for (Room r : rooms.values()) {
				KVPoll st = r.senderState;
				if (r.sender != null && st != null && !st.isTerminal() && now() - r.since > timeout) {
					violations.add(r + " stayed in " + st + " on prefill for " + Duration.ofNanos(now() - r.since)
							.toMillis() + " ms, past its timeout");
				}
			}
		}
		int connections = good.stats().connections();
		if (goodConnections < 0 && connections > 0) {
			goodConnections = connections;
		}
		if (!violations.isEmpty()) {
			throw new AssertionError(String.join("\n", violations) + "\nsteps:\n  " + String.join("\n  ", steps));
		}
	}

	/** @return whether every stripe the rogue's Success names fenced the room (so that all its bytes landed) */
	private boolean fencedAll(Room r) {
		// Asked only of rooms with an honest session.
		RogueDecodePeer.Session honestly = Objects.requireNonNull(r.honestly, "honestly");
		KVMessage.Status st = rogue.report(honestly, r.id);
		return st != null && rogue.fenced(honestly, r.id, st.fences());
	}

	private static int live(PrefillKVManager m) {
		int n = 0;
		for (int c : m.stats().liveRooms().values()) {
			n += c;
		}
		return n;
	}

	/**
	 * Ends the run: every request prefill published is served, time passes past every timeout, and then prefill must
	 * hold no room, the good decode's rooms must have succeeded, and a fresh good room must still succeed.
	 */
	public void end() {
		step("end");
		RoomRequest q;
		while ((q = pickRequest(0)) != null && freeSrc.size() >= q.pageCount()) {
			serve(0);
		}
		settle();
		Duration past = setup.stateTimeout().plus(setup.leasePeriod()).multipliedBy(2);
		if (vts != null) {
			vts.advanceTimeBy(past);
		}
		List<Mono<Void>> done = new ArrayList<>();
		for (Room r : goodRooms) {
			done.add(r.done);
		}
		try {
			Mono.when(done).block(T);
		}
		catch (RuntimeException e) {
			violations.add("the good decode's rooms did not all end: " + e);
		}
		for (Room r : goodRooms) {
			if (Objects.requireNonNull(r.receiver, "receiver").poll() != KVPoll.SUCCESS && !r.abortedByEngine && !(r.error instanceof KVTransferException k
					&& k.failureCause() == FailureCause.TIMEOUT && !r.servedLive)) {
				violations.add(r + ", of the well-behaved decode rank, ended " + r.receiver.poll() + ": " + r.error);
			}
		}
		if (vts != null && live(prefill) != 0) {
			violations.add("prefill still holds " + prefill.stats().liveRooms() + " rooms after every timeout");
		}
		int before = goodRooms.size();
		openGood(1, true);
		if (goodRooms.size() > before) {
			Room last = goodRooms.get(before);
			RoomRequest fresh = Mono.fromFuture(whenPublished(last.id)).timeout(T, Mono.empty()).block();
			if (fresh != null) {
				serve(fresh);
			}
			settle();
			try {
				last.done.block(T);
				KVReceiver receiver = Objects.requireNonNull(last.receiver, "receiver");
				if (receiver.poll() != KVPoll.SUCCESS) {
					violations.add("a fresh room of the good decode ended " + receiver.poll() + " after the run: "
							+ last.error);
				}
			}
			catch (RuntimeException e) {
				violations.add("a fresh room of the good decode did not end after the run: " + e);
			}
		}
		check();
	}

	/** @return how the rooms ended, one line per room, for the statistics a property reports */
	public List<String> outcomes() {
		List<String> out = new ArrayList<>();
		for (Room r : rooms.values()) {
			KVPoll st = r.senderState;
			out.add((r.good ? "good decode's room: " : "rogue's room: ") + (r.sender == null ? "never claimed"
					: "prefill " + st) + (r.verified ? " (bytes verified)" : ""));
		}
		return out;
	}

	// ---- helpers --------------------------------------------------------------------------------------------------

	private static int[] take(Deque<Integer> free, int n) {
		int[] pages = new int[n];
		for (int i = 0; i < n; i++) {
			pages[i] = free.poll();
		}
		return pages;
	}

	/** @return a session's control stripe, which it has from its opening */
	private RogueLink control(RogueDecodePeer.Session s) {
		return Objects.requireNonNull(rogue.link(s, 0), "control stripe");
	}

	private @Nullable Room pick(int pick, Predicate<Room> filter) {
		List<Room> candidates = new ArrayList<>();
		for (Room r : rooms.values()) {
			if (filter.test(r)) {
				candidates.add(r);
			}
		}
		candidates.sort((x, y) -> Long.compare(x.id, y.id));
		return candidates.isEmpty() ? null : candidates.get(Math.floorMod(pick, candidates.size()));
	}

	private void step(String what) {
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
