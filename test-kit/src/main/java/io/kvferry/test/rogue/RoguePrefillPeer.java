package io.kvferry.test.rogue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

import io.kvferry.KVArgs;
import io.kvferry.KVLayout;
import io.kvferry.ParallelLayout;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.PeerLayout;
import io.kvferry.spi.RegionLayout;
import org.jspecify.annotations.Nullable;

/**
 * A prefill rank that does only what it is told, over links its transport provides: it answers handshakes and joins
 * the way its current {@link Handshake} says, records every request decode sends and acknowledges aborts unless told
 * not to; every other frame it writes is a test's choice, through {@link #link}. Thread-safe: its transport reports
 * events from its own threads, the test acts from another.
 */
public final class RoguePrefillPeer {

	/** How the rank answers a handshake. */
	public enum Handshake {
		/** Its own layout, its incarnation, no leases. */
		HONEST,
		/** Leases at the floor decode allows. */
		LEASE_AT_FLOOR,
		/** Leases at the ceiling decode allows. */
		LEASE_AT_CEILING,
		/** Another incarnation at every handshake, as a process restarted each time. */
		NEW_INCARNATION,
		/** The first incarnation it ever showed, which a later one replaced: a process decode must never take back. */
		OLD_INCARNATION,
		/** A layout of one layer fewer than decode's. */
		FEWER_LAYERS,
		/** A layout of another KV dtype. */
		OTHER_DTYPE,
		/** A layout of more KV heads in the model than decode's. */
		OTHER_HEADS,
		/** A layout of another page size than the bootstrap server announced. */
		OTHER_PAGE_SIZE,
		/** A layout that names itself another TP rank than the one decode dialled. */
		WRONG_RANK,
		/** A refusal. */
		REJECT,
		/** No answer at all. */
		SILENT,
		/** An honest acknowledgement, then every further stripe refused. */
		REFUSE_STRIPES,
		/** An honest acknowledgement, then every further stripe told it joined as another index. */
		MISNUMBER_STRIPES,
		/** A lease below the floor, forged on a transport that carries bytes (honest elsewhere). */
		FORGED_SHORT_LEASE,
		/** A lease above the ceiling, forged on a transport that carries bytes (honest elsewhere). */
		FORGED_LONG_LEASE,
		/** A layout of more regions than any may have, forged on a transport that carries bytes (honest elsewhere). */
		FORGED_REGIONS
	}

	/** One decode rank's connection as the rogue answered it. */
	public static final class Session {
		final int number;
		final Handshake handshake;
		final long token;
		final RogueLink[] stripes;
		// Room -> the request decode sent for it on this session; guarded by the peer.
		final Map<Long, KVMessage.TransferRequest> requests = new HashMap<>();

		Session(int number, Handshake handshake, long token, int width, RogueLink control) {
			this.number = number;
			this.handshake = handshake;
			this.token = token;
			this.stripes = new RogueLink[width];
			this.stripes[0] = control;
		}

		/** @return how many stripes decode announced */
		public int width() {
			return stripes.length;
		}

		@Override
		public String toString() {
			return "session " + number + " (" + handshake + ", " + stripes.length + " stripes)";
		}
	}

	/** A request decode sent, and the session it came on. */
	public record Asked(Session session, KVMessage.TransferRequest request) {
	}

	private final KVArgs args;
	private final Random random;
	private final List<Session> sessions = new ArrayList<>();
	private final Map<Long, Asked> asked = new HashMap<>();
	private final Map<Long, CompletableFuture<Asked>> awaited = new HashMap<>();
	private final Set<RogueLink> unattached = ConcurrentHashMap.newKeySet();
	private final List<Long> incarnations = new ArrayList<>();
	private Handshake handshake = Handshake.HONEST;
	private boolean ackAborts = true;
	private long aborts;
	private long renewals;

	/**
	 * @param args the memory the rank's layout describes (its honest layout)
	 * @param seed draws its tokens and incarnations
	 */
	public RoguePrefillPeer(KVArgs args, long seed) {
		this.args = args;
		this.random = new Random(seed);
		incarnations.add(1 + (random.nextLong() >>> 1));
	}

	/** @return the layout its honest handshake announces */
	public PeerLayout layout() {
		return PeerLayout.of(args, ParallelLayout.SINGLE);
	}

	/** Sets how the next handshakes are answered. */
	public synchronized void handshake(Handshake h) {
		handshake = h;
	}

	/** Sets whether decode's aborts are acknowledged at once, on every stripe. */
	public synchronized void ackAborts(boolean ack) {
		ackAborts = ack;
	}

	/** The transport accepted a connection. */
	public void accepted(RogueLink link) {
		unattached.add(link);
	}

	/** A connection closed. */
	public void closed(RogueLink link) {
		unattached.remove(link);
	}

	/** Decode sent {@code m} on {@code link}. */
	public void received(RogueLink link, KVMessage m) {
		List<Runnable> replies = new ArrayList<>();
		synchronized (this) {
			if (m instanceof KVMessage.Hello hello && unattached.remove(link)) {
				hello(link, hello, replies);
			}
			else if (m instanceof KVMessage.Join join && unattached.remove(link)) {
				join(link, join, replies);
			}
			else if (m instanceof KVMessage.TransferRequest req) {
				Session s = sessionOf(link);
				if (s != null) {
					s.requests.put(req.room(), req);
					Asked a = new Asked(s, req);
					asked.put(req.room(), a);
					CompletableFuture<Asked> waiting = awaited.remove(req.room());
					if (waiting != null) {
						replies.add(() -> waiting.complete(a));
					}
				}
			}
			else if (m instanceof KVMessage.Abort abort) {
				aborts++;
				Session s = sessionOf(link);
				if (ackAborts && s != null) {
					for (RogueLink l : s.stripes) {
						if (l != null) {
							replies.add(() -> l.send(new KVMessage.AbortAck(abort.room())));
						}
					}
				}
			}
			else if (m instanceof KVMessage.Renew) {
				renewals++;
			}
		}
		// Written outside the monitor: a transport may deliver the reply's effects on this thread.
		replies.forEach(Runnable::run);
	}

	private void hello(RogueLink link, KVMessage.Hello hello, List<Runnable> replies) {
		Handshake h = handshake;
		long token = hello.stripes() > 1 ? 1 + (random.nextLong() >>> 1) : 0;
		Session s = new Session(sessions.size(), h, token, Math.max(1, Math.min(8, hello.stripes())), link);
		sessions.add(s);
		long incarnation = incarnations.get(incarnations.size() - 1);
		if (h == Handshake.NEW_INCARNATION) {
			incarnation = 1 + (random.nextLong() >>> 1);
			incarnations.add(incarnation);
		}
		else if (h == Handshake.OLD_INCARNATION) {
			incarnation = incarnations.get(0);
		}
		PeerLayout own = PeerLayout.of(args, ParallelLayout.SINGLE);
		long lease = h == Handshake.LEASE_AT_FLOOR ? KVMessage.HelloAck.MIN_LEASE_MILLIS
				: h == Handshake.LEASE_AT_CEILING ? KVMessage.HelloAck.MAX_LEASE_MILLIS : KVMessage.NO_LEASE;
		KVMessage answer = switch (h) {
			case SILENT -> null;
			case REJECT -> new KVMessage.Reject("rogue prefill rejects the handshake");
			case FEWER_LAYERS -> new KVMessage.HelloAck(fewerLayers(own), token, incarnation);
			case OTHER_DTYPE -> new KVMessage.HelloAck(with(own, own.pageSize(), "float8", own.totalKvHeadNum(),
					own.parallel()), token, incarnation);
			case OTHER_HEADS -> new KVMessage.HelloAck(with(own, own.pageSize(), own.dtype(), own.totalKvHeadNum() * 2,
					own.parallel()), token, incarnation);
			case OTHER_PAGE_SIZE -> new KVMessage.HelloAck(with(own, own.pageSize() * 2, own.dtype(),
					own.totalKvHeadNum(), own.parallel()), token, incarnation);
			case WRONG_RANK -> new KVMessage.HelloAck(with(own, own.pageSize(), own.dtype(), own.totalKvHeadNum(),
					ParallelLayout.tp(2, 1)), token, incarnation);
			default -> new KVMessage.HelloAck(own, token, incarnation, lease);
		};
		Forgery forged = switch (h) {
			case FORGED_SHORT_LEASE -> Forgery.LEASE_TOO_SHORT;
			case FORGED_LONG_LEASE -> Forgery.LEASE_TOO_LONG;
			case FORGED_REGIONS -> Forgery.TOO_MANY_REGIONS;
			default -> null;
		};
		if (forged != null) {
			replies.add(() -> {
				if (!link.forge(forged, token)) {
					link.send(new KVMessage.HelloAck(own, token, incarnations.get(incarnations.size() - 1)));
				}
			});
		}
		else if (answer != null) {
			replies.add(() -> link.send(answer));
		}
	}

	private void join(RogueLink link, KVMessage.Join join, List<Runnable> replies) {
		Session s = null;
		for (Session candidate : sessions) {
			if (candidate.token != 0 && candidate.token == join.token()) {
				s = candidate;
			}
		}
		int i = join.stripe();
		if (s == null || i < 1 || i >= s.stripes.length || s.stripes[i] != null
				|| s.handshake == Handshake.REFUSE_STRIPES) {
			replies.add(() -> link.send(new KVMessage.Reject("rogue prefill refuses stripe " + i)));
			return;
		}
		s.stripes[i] = link;
		int told = s.handshake == Handshake.MISNUMBER_STRIPES ? i + 1 : i;
		replies.add(() -> link.send(new KVMessage.Joined(told)));
	}

	private @Nullable Session sessionOf(RogueLink control) {
		for (Session s : sessions) {
			if (s.stripes[0] == control) {
				return s;
			}
		}
		return null;
	}

	/** @return the latest session whose control connection is open, or null */
	public synchronized @Nullable Session current() {
		for (int i = sessions.size() - 1; i >= 0; i--) {
			if (sessions.get(i).stripes[0].isOpen()) {
				return sessions.get(i);
			}
		}
		return null;
	}

	/** @return every session so far, oldest first */
	public synchronized List<Session> sessions() {
		return List.copyOf(sessions);
	}

	/** @return the last request decode sent for the room, with its session; null when none */
	public synchronized @Nullable Asked asked(long room) {
		return asked.get(room);
	}

	/** @return completes once decode asked for the room (at once when it did) */
	public synchronized CompletableFuture<Asked> whenAsked(long room) {
		Asked a = asked.get(room);
		return a != null ? CompletableFuture.completedFuture(a)
				: awaited.computeIfAbsent(room, r -> new CompletableFuture<>());
	}

	/** @return the link of the session's stripe, or null when that stripe never joined */
	public synchronized @Nullable RogueLink link(Session s, int stripe) {
		return stripe < s.stripes.length ? s.stripes[stripe] : null;
	}

	/** @return aborts decode sent so far */
	public synchronized long aborts() {
		return aborts;
	}

	/** @return renewals decode sent so far */
	public synchronized long renewals() {
		return renewals;
	}

	/** @return the layout with the KV buffers of its last layer left out */
	private static PeerLayout fewerLayers(PeerLayout l) {
		int half = l.kv().size() / 2;
		List<RegionLayout> kv = new ArrayList<>(l.kv().subList(0, half - 1));
		kv.addAll(l.kv().subList(half, 2 * half - 1));
		return new PeerLayout(l.engineRank(), l.parallel(), l.pageSize(), l.mla(), l.dtype(), l.kvHeadNum(),
				l.totalKvHeadNum(), l.startLayer(), l.draftLayers(), kv, l.aux(), l.state(), l.stateKinds(),
				l.stateTpDims(), l.allCpRanksTransfer(), l.dsaCacheLayerSplit(), l.modelId(), l.modelLayers(),
				l.kvLayout());
	}

	private static PeerLayout with(PeerLayout l, int pageSize, String dtype, int totalHeads, ParallelLayout parallel) {
		return new PeerLayout(l.engineRank(), parallel, pageSize, l.mla(), dtype, l.kvHeadNum(), totalHeads,
				l.startLayer(), l.draftLayers(), l.kv(), l.aux(), l.state(), l.stateKinds(), l.stateTpDims(),
				l.allCpRanksTransfer(), l.dsaCacheLayerSplit(), l.modelId(), l.modelLayers(), KVLayout.NHD);
	}
}
