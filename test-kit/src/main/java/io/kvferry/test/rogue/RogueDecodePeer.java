package io.kvferry.test.rogue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

import io.kvferry.KVArgs;
import io.kvferry.KVPoll;
import io.kvferry.MemoryRegion;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.PayloadSink;
import io.kvferry.spi.RegionKind;
import io.kvferry.test.RegionSink;
import org.jspecify.annotations.Nullable;

/**
 * A decode rank that does only what it is told: it dials prefill, says hello, joins stripes and asks, renews and
 * aborts rooms as a test says, with any field, and checks everything prefill writes to it: every data frame must name
 * a room this session asked for, lie inside the pages, aux row and state slots it asked for and inside the regions it
 * registered, and come before prefill acknowledged the room's abort on that connection. What passes lands in its own
 * memory, so that a test can check it holds the source's bytes; what does not is recorded as a violation and dropped.
 * Thread-safe: the transport reports from its threads, the test acts from another.
 */
public final class RogueDecodePeer {

	/** What a rogue decode's connection hears from prefill. */
	public interface Inbound {
		void message(RogueLink link, KVMessage message);

		@Nullable PayloadSink data(RogueLink link, DataHeader header);

		void closed(RogueLink link);
	}

	/** One connection to prefill and the stripes that joined it. */
	public static final class Session {
		final int number;
		final RogueLink[] stripes;
		// Guarded by the peer.
		long token;
		boolean acknowledged;
		@Nullable String rejected;
		final Map<Long, KVMessage.TransferRequest> asked = new HashMap<>();
		final Map<Long, KVMessage.Status> reports = new HashMap<>();
		// Per room, the stripes that acknowledged its abort: nothing more of it may come on them.
		final Map<Long, Set<RogueLink>> quiet = new HashMap<>();
		final Set<Long> aborted = new HashSet<>();
		// Per room, the stripes that sent its fence.
		final Map<Long, Integer> fences = new HashMap<>();
		// Per room, completes once prefill reported on it.
		final Map<Long, CompletableFuture<KVMessage.Status>> reported = new HashMap<>();
		// Completes once prefill answered the hello (or refused it, or the connection closed).
		final CompletableFuture<Void> answered = new CompletableFuture<>();

		Session(int number, int width, RogueLink control) {
			this.number = number;
			this.stripes = new RogueLink[width];
			this.stripes[0] = control;
		}

		public int width() {
			return stripes.length;
		}

		@Override
		public String toString() {
			return "rogue decode session " + number + " (" + stripes.length + " stripes)";
		}
	}

	private final KVArgs args;
	private final List<Session> sessions = new ArrayList<>();
	private final Map<RogueLink, Session> byLink = new HashMap<>();
	private final List<String> violations = new CopyOnWriteArrayList<>();
	private final AtomicLong received = new AtomicLong();

	/** @param args the memory the rank registers (its layout) and where what prefill writes lands */
	public RogueDecodePeer(KVArgs args) {
		this.args = args;
	}

	/**
	 * Dials prefill for a new session, its first connection.
	 *
	 * @param dial opens a connection that reports to the given inbound
	 * @param width the stripes the session's hello will announce
	 */
	public Session open(Function<Inbound, RogueLink> dial, int width) {
		Inbound in = inbound();
		RogueLink link = dial.apply(in);
		synchronized (this) {
			Session s = new Session(sessions.size(), Math.max(1, Math.min(8, width)), link);
			sessions.add(s);
			byLink.put(link, s);
			return s;
		}
	}

	/** Dials a further stripe of a session, to join as {@code index}; null when the index is not the session's. */
	public @Nullable RogueLink dialStripe(Function<Inbound, RogueLink> dial, Session s, int index) {
		RogueLink link = dial.apply(inbound());
		synchronized (this) {
			byLink.put(link, s);
			if (index >= 1 && index < s.stripes.length && s.stripes[index] == null) {
				s.stripes[index] = link;
			}
		}
		return link;
	}

	private Inbound inbound() {
		return new Inbound() {
			@Override
			public void message(RogueLink link, KVMessage message) {
				onMessage(link, message);
			}

			@Override
			public @Nullable PayloadSink data(RogueLink link, DataHeader header) {
				return onData(link, header);
			}

			@Override
			public void closed(RogueLink link) {
				Session s;
				synchronized (RogueDecodePeer.this) {
					s = byLink.get(link);
				}
				if (s != null && s.stripes[0] == link) {
					s.answered.complete(null);
				}
			}
		};
	}

	/** Records that this session asks for a room, just before the request goes out. */
	public synchronized void asking(Session s, KVMessage.TransferRequest req) {
		s.asked.put(req.room(), req);
	}

	/** Records that this session aborts a room, just before the abort goes out. */
	public synchronized void aborting(Session s, long room) {
		s.aborted.add(room);
	}

	private synchronized void onMessage(RogueLink link, KVMessage m) {
		Session s = byLink.get(link);
		if (s == null) {
			return;
		}
		if (m instanceof KVMessage.HelloAck ack) {
			s.token = ack.token();
			s.acknowledged = true;
			s.answered.complete(null);
		}
		else if (m instanceof KVMessage.Reject r) {
			s.rejected = r.reason();
			s.answered.complete(null);
		}
		else if (m instanceof KVMessage.Fence f) {
			for (int i = 0; i < s.stripes.length; i++) {
				if (s.stripes[i] == link) {
					s.fences.merge(f.room(), 1 << i, (x, y) -> x | y);
				}
			}
		}
		else if (m instanceof KVMessage.Status st) {
			s.reports.put(st.room(), st);
			s.reported.computeIfAbsent(st.room(), r -> new CompletableFuture<>()).complete(st);
		}
		else if (m instanceof KVMessage.AbortAck ack) {
			s.quiet.computeIfAbsent(ack.room(), r -> new HashSet<>()).add(link);
		}
	}

	private @Nullable PayloadSink onData(RogueLink link, DataHeader h) {
		String wrong;
		MemoryRegion region = null;
		synchronized (this) {
			Session s = byLink.get(link);
			KVMessage.TransferRequest req = s == null ? null : s.asked.get(h.room());
			if (s == null) {
				wrong = "on a connection of no session";
			}
			else if (req == null) {
				wrong = "for room " + h.room() + ", which " + s + " never asked for";
			}
			else if (s.quiet.getOrDefault(h.room(), Set.of()).contains(link)) {
				wrong = "for room " + h.room() + " after prefill acknowledged its abort on this connection";
			}
			else if (req.dummy()) {
				wrong = "for room " + h.room() + ", which " + s + " asked only to take part (dummy)";
			}
			else {
				List<MemoryRegion> regions = h.kind() == RegionKind.KV ? args.kvRegions()
						: h.kind() == RegionKind.AUX ? args.auxRegions() : args.stateRegions();
				region = h.region() >= 0 && h.region() < regions.size() ? regions.get(h.region()) : null;
				wrong = region == null ? "for " + h.kind() + " region " + h.region() + ", which this rank did not "
						+ "register" : outside(h, region, req);
			}
		}
		if (wrong != null || region == null) {
			violations.add("prefill wrote " + h + " " + wrong);
			return null;
		}
		return new RegionSink(region, h, received, () -> {
		});
	}

	/** @return why the header's bytes are not all in the items the request asked for, or null when they are */
	private static @Nullable String outside(DataHeader h, MemoryRegion region, KVMessage.TransferRequest req) {
		long stride = h.count() == 1 ? h.chunkLen() : h.dstStride();
		if (h.chunkLen() < 1 || h.count() < 1 || h.dstOffset() < 0 || stride < h.chunkLen()
				|| !region.contains(h.dstOffset(), h.span())) {
			return "outside " + h.kind() + " region " + h.region() + " (" + region.length() + " bytes)";
		}
		int[] items = h.kind() == RegionKind.KV ? req.dstPages()
				: h.kind() == RegionKind.AUX ? new int[] { req.auxIndex() } : req.stateIndices();
		for (int c = 0; c < h.count(); c++) {
			long start = h.dstOffset() + c * stride;
			for (long item = start / region.itemLen(); item * region.itemLen() < start + h.chunkLen(); item++) {
				boolean mine = false;
				for (int i : items) {
					mine |= i == item;
				}
				if (!mine) {
					return "into " + h.kind() + " item " + item + ", which the request did not ask for";
				}
			}
		}
		return null;
	}

	/** @return completes once prefill answered the session's hello, refused it, or closed its connection */
	public CompletableFuture<Void> answered(Session s) {
		return s.answered;
	}

	/** @return completes once prefill reported on the room on the session */
	public synchronized CompletableFuture<KVMessage.Status> whenReported(Session s, long room) {
		return s.reported.computeIfAbsent(room, r -> new CompletableFuture<>());
	}

	/** @return whether every stripe in {@code mask} fenced the room on the session */
	public synchronized boolean fenced(Session s, long room, int mask) {
		return (s.fences.getOrDefault(room, 0) & mask) == mask;
	}

	/** @return the sessions so far, oldest first */
	public synchronized List<Session> sessions() {
		return List.copyOf(sessions);
	}

	/** @return the link of a session's stripe, or null */
	public synchronized @Nullable RogueLink link(Session s, int stripe) {
		return stripe < s.stripes.length ? s.stripes[stripe] : null;
	}

	/** @return the session's token, from prefill's acknowledgement (0 before it) */
	public synchronized long token(Session s) {
		return s.token;
	}

	/** @return what prefill reported of a room on the session, or null */
	public synchronized KVMessage.@Nullable Status report(Session s, long room) {
		return s.reports.get(room);
	}

	/** @return the request the session sent for a room, or null */
	public synchronized KVMessage.@Nullable TransferRequest asked(Session s, long room) {
		return s.asked.get(room);
	}

	/** @return whether prefill reported Success of the room on some session */
	public synchronized boolean succeeded(long room) {
		for (Session s : sessions) {
			KVMessage.Status st = s.reports.get(room);
			if (st != null && st.status() == KVPoll.SUCCESS) {
				return true;
			}
		}
		return false;
	}

	/** @return what prefill did that it must not have done, so far */
	public List<String> violations() {
		return List.copyOf(violations);
	}
}
