package io.kvferry.test.rogue;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import io.kvferry.KVPoll;
import io.kvferry.ParallelLayout;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.FailureCodes;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.PeerLayout;
import io.kvferry.spi.RegionKind;
import io.kvferry.test.rogue.RogueDecodeWorld.Ask;
import io.kvferry.test.rogue.RogueDecodeWorld.Hello;
import io.kvferry.test.rogue.RogueDecodeWorld.Join;
import io.kvferry.test.rogue.RogueDecodeWorld.Stray;
import io.kvferry.test.rogue.RogueDecodeWorld.Target;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;

/**
 * What the rogue decode does to prefill: the sessions it opens and joins, what it asks, aborts and renews, and
 * the frames prefill must refuse.
 */
final class RogueDecodeSessions {

	private final RogueDecodeWorld world;

	RogueDecodeSessions(RogueDecodeWorld world) {
		this.world = world;
	}

	private RogueLink dial(RogueDecodePeer.Inbound in) {
		return world.setup.dial().apply(world.prefill.endpoint(), in);
	}

	/** The rogue dials prefill and opens a session. */
	void connect(int width, Hello kind, boolean checksums) {
		int w = kind == Hello.TOO_MANY_STRIPES ? 9 : width;
		RogueDecodePeer.Session s = world.rogue.open(this::dial, w);
		RogueLink l = world.control(s);
		world.step("the rogue opens " + s + " with hello " + kind);
		PeerLayout layout = PeerLayout.of(world.rogueMem.kvArgs(), ParallelLayout.SINGLE);
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
			case REQUEST_FIRST -> l.send(new KVMessage.TransferRequest(world.nextRoom++, new int[] { 0 }, -1, new int[0], 1,
					false));
			case JOIN_FIRST -> l.send(new KVMessage.Join(1, 1));
			default -> l.send(honest);
		}
		world.settle();
		if (!world.virtual()) {
			// The steps after act on an acknowledged session: on real time the answer comes a moment later.
			awaitToken(s);
		}
		world.check();
	}

	private void awaitToken(RogueDecodePeer.Session s) {
		Mono.fromFuture(world.rogue.answered(s)).timeout(RogueDecodeWorld.ANSWER, Mono.empty()).block(RogueDecodeWorld.T);
	}

	/** The rogue dials a further stripe of one of its sessions and joins it, as told. */
	void join(int pick, Join kind) {
		RogueDecodePeer.Session s = session(pick);
		if (s == null) {
			return;
		}
		long token = world.rogue.token(s);
		int next = 1;
		while (next < s.width() && world.rogue.link(s, next) != null) {
			next++;
		}
		int index = switch (kind) {
			case NEXT, WRONG_TOKEN, ON_CONTROL_STRIPE -> next;
			case INDEX_ZERO -> 0;
			case INDEX_PAST_WIDTH -> s.width();
			case SAME_INDEX_AGAIN -> Math.max(1, next - 1);
		};
		world.step("the rogue joins " + s + " as stripe " + index + " (" + kind + ")");
		if (kind == Join.ON_CONTROL_STRIPE) {
			world.control(s).send(new KVMessage.Join(token, index));
		}
		else {
			RogueLink l = Objects.requireNonNull(world.rogue.dialStripe(this::dial, s, kind == Join.NEXT ? index : -1),
					"dialled stripe");
			l.send(new KVMessage.Join(kind == Join.WRONG_TOKEN ? token + 1 : token, index));
		}
		world.settle();
		world.check();
	}

	/** The rogue asks for a room, as told. */
	void ask(int pick, Ask kind, int n, int a) {
		RogueDecodePeer.Session s = session(pick);
		if (s == null) {
			return;
		}
		RogueLink control = world.rogue.link(s, 0);
		int pages = 1 + Math.floorMod(n, 4);
		// A new room unless the kind names an existing one: room ids are never reused.
		boolean existing = kind == Ask.SAME_ROOM_AGAIN || kind == Ask.OWN_ROOM_ON_OTHER_SESSION
				|| kind == Ask.OTHER_DECODES_ROOM;
		long room = existing ? -1 : world.nextRoom++;
		boolean honest = false;
		int[] dst;
		int aux = (a & 1) == 0 ? -1 : Math.floorMod(a, RogueDecodeWorld.AUX_ROWS);
		int required = 1;
		boolean dummy = false;
		int prefix = 0;
		int[] state = new int[0];
		RogueLink on = control;
		switch (kind) {
			case HONEST, ON_DATA_STRIPE, BEFORE_STRIPES_JOINED -> {
				if (world.freeRogue.size() < pages) {
					return;
				}
				dst = RogueDecodeWorld.take(world.freeRogue, pages);
				honest = kind == Ask.HONEST;
				if (kind == Ask.ON_DATA_STRIPE) {
					on = world.rogue.link(s, s.width() - 1);
				}
			}
			case SAME_ROOM_AGAIN, OWN_ROOM_ON_OTHER_SESSION -> {
				RogueDecodeRoom mine = world.pick(a, x -> !x.good && x.pages.length > 0);
				if (mine == null) {
					return;
				}
				room = mine.id;
				dst = mine.pages.clone();
			}
			case OTHER_DECODES_ROOM -> {
				// Only a room prefill published for the good decode: one the rogue asks first is the rogue's.
				RogueDecodeRoom theirs = world.pick(a, x -> x.good && world.isPublished(x.id));
				if (theirs == null) {
					return;
				}
				room = theirs.id;
				dst = new int[] { Math.floorMod(a, RogueDecodeWorld.ROGUE_PAGES) };
			}
			case PAGE_PAST_END -> dst = new int[] { RogueDecodeWorld.ROGUE_PAGES + Math.floorMod(a, 1000) };
			case NEGATIVE_PAGE -> dst = new int[] { -1 - Math.floorMod(a, 1000) };
			case DUPLICATE_PAGES -> dst = new int[] { Math.floorMod(a, RogueDecodeWorld.ROGUE_PAGES), Math.floorMod(a, RogueDecodeWorld.ROGUE_PAGES) };
			case MORE_PAGES_THAN_REGISTERED -> {
				dst = new int[RogueDecodeWorld.ROGUE_PAGES + 1];
				for (int i = 0; i < dst.length; i++) {
					dst[i] = i % RogueDecodeWorld.ROGUE_PAGES;
				}
			}
			case AUX_PAST_END -> {
				dst = new int[] { Math.floorMod(a, RogueDecodeWorld.ROGUE_PAGES) };
				aux = RogueDecodeWorld.AUX_ROWS + Math.floorMod(a, 100);
			}
			case STATE_SLOTS -> {
				dst = new int[] { Math.floorMod(a, RogueDecodeWorld.ROGUE_PAGES) };
				state = new int[] { 0, 1 };
			}
			case TWO_DESTINATIONS -> {
				dst = new int[] { Math.floorMod(a, RogueDecodeWorld.ROGUE_PAGES) };
				required = 2;
			}
			case DUMMY -> {
				dst = new int[0];
				dummy = true;
			}
			case PREFIX_OF_A_PAGE, PREFIX_NOT_A_PAGE -> {
				dst = new int[] { Math.floorMod(a, RogueDecodeWorld.ROGUE_PAGES) };
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
			on = world.rogue.link(s, 0);
		}
		if (on == null) {
			return;
		}
		KVMessage.TransferRequest req = new KVMessage.TransferRequest(room, dst, aux, state, required, dummy, "",
				prefix, new int[0]);
		RogueDecodeRoom r = world.rooms.computeIfAbsent(room, id -> new RogueDecodeRoom(id, false));
		if (!r.good && r.pages.length == 0) {
			r.pages = dst;
			r.aux = aux;
			world.rogueRooms.add(r);
		}
		if (honest) {
			r.honestly = s;
		}
		world.step("the rogue asks " + req + " on " + s + " (" + kind + ")");
		world.rogue.asking(s, req);
		on.send(req);
		world.settle();
		if (!world.virtual()) {
			// The engine's steps act on what prefill published: on real time it comes a moment later, if at all.
			Mono.firstWithSignal(Mono.fromFuture(world.whenPublished(room)), Mono.fromFuture(world.rogue.whenReported(s, room)))
					.timeout(RogueDecodeWorld.ANSWER, Mono.empty()).onErrorResume(e -> Mono.empty()).block(RogueDecodeWorld.T);
		}
		world.check();
	}

	/** The rogue aborts a room, as told. */
	void abort(int pick, Target target, int code) {
		RogueDecodePeer.Session s = session(pick);
		long room = room(target, code);
		if (s == null || room < 0) {
			return;
		}
		int c = Math.floorMod(code, FailureCodes.MAX + 1);
		world.step("the rogue aborts room " + room + " (" + target + ", code " + c + ") on " + s);
		world.rogue.aborting(s, room);
		world.control(s).send(new KVMessage.Abort(room, "the rogue aborts", c, Math.floorMod(code, 1 << 20)));
		world.settle();
		world.check();
	}

	/** The rogue renews rooms, as told. */
	void renew(int pick, Target target, int many) {
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
		world.step("the rogue renews " + n + " rooms (" + target + ") on " + s);
		world.control(s).send(new KVMessage.Renew(ids));
		world.settle();
		world.check();
	}

	/** The rogue sends a message decode never sends, on any of its stripes. */
	void stray(int pick, Stray kind, int stripe) {
		RogueDecodePeer.Session s = session(pick);
		RogueLink l = s == null ? null : world.rogue.link(s, Math.floorMod(stripe, s.width()));
		if (l == null) {
			return;
		}
		long room = room(Target.OWN, stripe);
		KVMessage m = switch (kind) {
			case HELLO_ACK -> new KVMessage.HelloAck(PeerLayout.of(world.rogueMem.kvArgs(), ParallelLayout.SINGLE));
			case STATUS -> new KVMessage.Status(Math.max(room, 0), KVPoll.SUCCESS, 0, "");
			case FENCE -> new KVMessage.Fence(Math.max(room, 0), 0, KVMessage.NO_CHECKSUM);
			case JOINED -> new KVMessage.Joined(1);
			case ABORT_ACK -> new KVMessage.AbortAck(Math.max(room, 0));
			case DRAINING -> new KVMessage.Draining("the rogue drains");
			case REJECT -> new KVMessage.Reject("the rogue rejects");
		};
		world.step("the rogue sends a stray " + m + " on " + l);
		l.send(m);
		world.settle();
		world.check();
	}

	/** The rogue sends a data frame to prefill, which never receives KV. */
	void data(int pick, int stripe) {
		RogueDecodePeer.Session s = session(pick);
		RogueLink l = s == null ? null : world.rogue.link(s, Math.floorMod(stripe, s.width()));
		if (l == null) {
			return;
		}
		world.step("the rogue sends a data frame on " + l);
		l.data(new DataHeader(1, RegionKind.KV, 0, 0, 8, 0, 1), world.rogueMem.kvArgs().kvRegions().get(0).address(), 0);
		world.settle();
		world.check();
	}

	/** The rogue closes one of its connections. */
	void close(int pick, int stripe) {
		RogueDecodePeer.Session s = session(pick);
		RogueLink l = s == null ? null : world.rogue.link(s, Math.floorMod(stripe, s.width()));
		if (l == null) {
			return;
		}
		world.step("the rogue closes " + l);
		l.close();
		world.settle();
		world.check();
	}

	private RogueDecodePeer.@Nullable Session session(int pick) {
		List<RogueDecodePeer.Session> all = world.rogue.sessions();
		List<RogueDecodePeer.Session> open = new ArrayList<>();
		for (RogueDecodePeer.Session s : all) {
			RogueLink l = world.rogue.link(s, 0);
			if (l != null && l.isOpen()) {
				open.add(s);
			}
		}
		return open.isEmpty() ? null : open.get(Math.floorMod(pick, open.size()));
	}

	/** @return a room id: one of the rogue's, one of the good decode's, or one nobody opened; -1 when none */
	long room(Target target, int pick) {
		RogueDecodeRoom r = switch (target) {
			case OWN -> world.pick(pick, x -> !x.good && x.pages.length > 0);
			case OTHER_DECODES -> world.pick(pick, x -> x.good && world.isPublished(x.id));
			case UNKNOWN -> null;
		};
		if (target == Target.UNKNOWN) {
			return 1_000_000 + Math.floorMod(pick, 1000);
		}
		return r == null ? -1 : r.id;
	}
}
