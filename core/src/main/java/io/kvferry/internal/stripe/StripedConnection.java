package io.kvferry.internal.stripe;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import io.kvferry.HostPort;
import io.kvferry.RoomPath;
import io.kvferry.spi.CloseReason;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.SendGate;
import io.kvferry.spi.SendListener;

/**
 * One peer as a role engine sees it: one connection, though it may be several. The first connection (stripe 0)
 * carries the handshake and every control message; the peer may ask for further stripes, which join with the token
 * this side hands out, and which only carry the rooms' data, dealt in pieces by each room's {@link StripedFlow}.
 * Closing one stripe closes all of them, and the engine hears of the close once the last one closed, when no queued
 * block is read from its memory any more.
 *
 * <p>Written for the accepting side, but nothing in it depends on who opened the stripes but the token registry.
 */
public final class StripedConnection {

	/** Most connections one peer may open to a rank: the engine's bound on a decode rank's stripes. */
	public static final int MAX_WIDTH = 8;

	/** What a role engine hears from its peer. */
	public interface Handler {

		/** A control message, in the order the peer sent it (control messages come on stripe 0 only). */
		void onMessage(KVMessage message);

		/**
		 * Every stripe closed: nothing queued on any of them is read any more.
		 *
		 * @param first what closed the first stripe
		 * @param counted what the peer counts as lost to: a heartbeat loss if any stripe saw one, else {@code first}
		 */
		void onClose(CloseReason first, CloseReason counted);
	}

	private final AcceptedStripes registry;
	private final KVConnection control;
	// Set once by the stripe that accepted the handshake, before the handler hears its first message.
	private volatile Handler handler;
	private volatile boolean checksums;
	// Index = stripe; set by the handshake, filled as stripes join, complete before the first room is served.
	private volatile KVConnection[] stripes;
	// Guarded by this.
	private long token;
	private int joined = 1;
	private int unclosed = 1;
	private CloseReason closedBy;
	// A stripe's heartbeat loss, if any: the peer counts as lost to silence once.
	private CloseReason silentBy;

	StripedConnection(AcceptedStripes registry, KVConnection control) {
		this.registry = registry;
		this.control = control;
		this.stripes = new KVConnection[] { control };
	}

	void handler(Handler h) {
		this.handler = h;
	}

	Handler handler() {
		return handler;
	}

	/** @return why a peer may not open {@code count} connections to this rank, or null when it may */
	public static String refusesWidth(int count) {
		if (count < 1 || count > MAX_WIDTH) {
			return "stripes : " + count + " (expected: 1.." + MAX_WIDTH + " connections per prefill rank)";
		}
		return null;
	}

	/**
	 * Takes the peer's handshake: how many stripes it opens and whether their tallies carry checksums.
	 *
	 * @return the token further stripes join with, or 0 when there are none (or the connection closed meanwhile)
	 */
	public long expect(int count, boolean withChecksums) {
		checksums = withChecksums;
		synchronized (this) {
			if (closedBy != null || count <= 1) {
				return 0;
			}
			KVConnection[] all = new KVConnection[count];
			all[0] = control;
			stripes = all;
			token = registry.issue(this);
			return token;
		}
	}

	/** @return null once {@code index} joined, else why it may not */
	synchronized String attach(KVConnection link, int index) {
		KVConnection[] all = stripes;
		if (closedBy != null) {
			return "the session closed (" + closedBy + ")";
		}
		if (index < 1 || index >= all.length) {
			return "stripe index " + index + " (expected: 1.." + (all.length - 1) + ", the session has " + all.length
					+ " stripes)";
		}
		if (all[index] != null) {
			return "stripe " + index + " already joined";
		}
		all[index] = link;
		unclosed++;
		if (++joined == all.length) {
			registry.forget(token, this);
		}
		return null;
	}

	/** @return whether every stripe the handshake announced joined */
	public synchronized boolean isComplete() {
		return joined == stripes.length;
	}

	/** @return how many connections the handshake announced */
	public int width() {
		return stripes.length;
	}

	/**
	 * @return how the peer's connections move a room's bytes: stripe 0's kind, with the stripes joined so far, TLS only
	 *         when every one of them has it (the same reading as the dialling side's)
	 */
	public RoomPath path() {
		KVConnection[] all = stripes;
		RoomPath first = all[0].path();
		if (first.kind() == RoomPath.Kind.UNKNOWN) {
			return RoomPath.UNKNOWN;
		}
		int joinedNow = 0;
		boolean tls = true;
		for (KVConnection c : all) {
			if (c != null) {
				joinedNow++;
				tls &= c.path().tls();
			}
		}
		return new RoomPath(first.kind(), joinedNow, tls);
	}

	public HostPort remoteAddress() {
		return control.remoteAddress();
	}

	/** Queues a control message on stripe 0. */
	public void send(KVMessage message) {
		control.send(message);
	}

	/** Queues a control message on stripe 0. */
	public void send(KVMessage message, SendGate gate, SendListener listener) {
		control.send(message, gate, listener);
	}

	/** Closes every stripe; {@link Handler#onClose} follows once the last one closed. */
	public void close(String reason) {
		control.close(reason);
	}

	/**
	 * Queues {@code message} on every stripe attached so far: whichever stripe the peer sees close first, it read the
	 * message before.
	 *
	 * @param done called once each copy was written or dropped, or null
	 */
	public void broadcast(KVMessage message, Runnable done) {
		List<KVConnection> all = attached();
		if (done == null) {
			for (KVConnection c : all) {
				c.send(message);
			}
			return;
		}
		AtomicInteger left = new AtomicInteger(all.size() + 1);
		Runnable one = () -> {
			if (left.decrementAndGet() == 0) {
				done.run();
			}
		};
		for (KVConnection c : all) {
			c.send(message, SendGate.OPEN, SendListener.either(one));
		}
		one.run();
	}

	/**
	 * Queues one message after everything already queued for a room, on every open stripe that may have carried the
	 * room's data, ungated: once each was written (or its stripe closed), no queued block of the room is read any more.
	 *
	 * @param onControl what stripe 0 gets
	 * @param onOthers what every further stripe gets
	 * @param done called once, when all were written or dropped
	 */
	public void sendBehind(KVMessage onControl, KVMessage onOthers, Runnable done) {
		List<KVConnection> open = new ArrayList<>();
		for (KVConnection c : attached()) {
			if (c.isActive()) {
				open.add(c);
			}
		}
		AtomicInteger left = new AtomicInteger(open.size() + 1);
		Runnable one = () -> {
			if (left.decrementAndGet() == 0) {
				done.run();
			}
		};
		for (KVConnection c : open) {
			c.send(c == control ? onControl : onOthers, SendGate.OPEN, SendListener.either(one));
		}
		one.run();
	}

	/**
	 * @param room the room whose data the flow carries
	 * @param gate what the room's blocks and closing messages are sent behind
	 * @param firstStripeBytes how many of the room's first bytes go on stripe 0 alone
	 * @return one room's data path to the peer, dealt over every stripe; call once every stripe joined
	 */
	public StripedFlow flow(long room, SendGate gate, long firstStripeBytes) {
		return new StripedFlow(room, stripes, checksums, gate, firstStripeBytes);
	}

	/** @return the stripes attached so far, in index order */
	synchronized List<KVConnection> attached() {
		return Stripes.attached(stripes);
	}

	/**
	 * One stripe closed: the others are closed too, and the handler hears of it once the last one closed, when no
	 * queued block is read any more.
	 */
	void stripeClosed(KVConnection closed, CloseReason reason) {
		List<KVConnection> others = List.of();
		boolean last;
		CloseReason first;
		CloseReason counted;
		synchronized (this) {
			if (closedBy == null) {
				closedBy = reason;
				others = attached();
				registry.forget(token, this);
			}
			if (reason.kind() == CloseReason.Kind.SILENT_PEER) {
				silentBy = reason;
			}
			first = closedBy;
			last = --unclosed == 0;
			counted = silentBy != null ? silentBy : closedBy;
		}
		for (KVConnection c : others) {
			if (c != closed) {
				c.close("another stripe of the " + this + " closed: " + reason);
			}
		}
		if (last) {
			handler.onClose(first, counted);
		}
	}

	@Override
	public String toString() {
		return "session with decode " + control.remoteAddress();
	}
}
