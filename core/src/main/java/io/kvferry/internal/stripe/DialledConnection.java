package io.kvferry.internal.stripe;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;

import io.kvferry.FailureCause;
import io.kvferry.HostPort;
import io.kvferry.ProtocolException;
import io.kvferry.RoomPath;
import io.kvferry.spi.CloseReason;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.KVTransport;
import io.kvferry.spi.PayloadSink;
import io.kvferry.spi.ScatterHeader;
import io.kvferry.spi.SendGate;
import io.kvferry.spi.SendListener;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * One prefill rank as decode dials it: {@code width} transport connections (stripes), each read on its own thread,
 * that the rank's session sees as one connection. A rank that registered several endpoints (one per network
 * interface) gets stripe {@code i} dialled at endpoint {@code i} modulo their number, so that a room's bytes, dealt
 * evenly over the stripes, spread over the interfaces; the first endpoint carries stripe 0. Stripe 0 carries the handshake and the control messages; every
 * stripe carries bytes, and the fences and abort acknowledgements that say a room's bytes on it are over. Here lives
 * everything striping adds to a session: the joins, what landed per stripe, the fences, the Success held until every
 * stripe's bytes of the room landed, the abort answered only once every stripe answered it, and closing as one (one
 * stripe alone cannot serve the rank).
 *
 * <p>The session is called on the transport's threads and never under a lock of this class, so it may take its own.
 */
public final class DialledConnection {

	/** What the connection tells the rank's session. */
	public interface Peer {

		/** The first stripe connected, before it is attached: from here on the connection counts as open. */
		void onConnected();

		/**
		 * A control message, or a drain notice (every stripe carries one, so that whichever closes first was told why).
		 *
		 * @return false when the message is unexpected: the stripe it came on is closed
		 */
		boolean onMessage(KVMessage message);

		/**
		 * @param header a data header the stripes' rules allow
		 * @param tally what landed of the room on the header's stripe, for the returned sink to feed; null when the
		 *        rank was not asked for the room
		 * @return where the payload lands, or null to drop it
		 */
		PayloadSink onData(DataHeader header, Tally tally);

		/**
		 * A scatter frame's pieces, which the stripes' rules allow: sets each piece's sink in {@code sinks} (handed
		 * filled with null), as {@link #onData} would piece by piece.
		 */
		void onScatter(ScatterHeader header, Tally tally, PayloadSink[] sinks);

		/**
		 * A room's bytes broke the stripes' rules or do not match what the rank reported on a stripe; only for a room
		 * the rank was asked to write.
		 */
		void onRoomError(long room, FailureCause cause, String reason);

		/**
		 * A frame named a room this rank was not asked to write: a data header or a fence. The room cannot be blamed:
		 * the session lets the frame pass when the room ended or is unknown (a late frame), else the rank broke the
		 * protocol.
		 *
		 * @param what the frame, for the reason
		 */
		void onUnasked(long room, String what);

		/** The first stripe closed; the others are being closed. */
		void onClosing(CloseReason reason);

		/**
		 * Every stripe closed: nothing more lands from the rank.
		 *
		 * @param cause the first stripe's close
		 * @param counted what the rank is counted lost to: a heartbeat loss if any stripe saw one
		 */
		void onClosed(CloseReason cause, CloseReason counted);
	}

	private final KVTransport transport;
	// Stripe 0's endpoint: the rank's first, named in messages.
	private final HostPort endpoint;
	private final List<HostPort> endpoints;
	final Peer peer;
	final boolean checksums;
	private final DialledStripe[] stripes;
	// Rooms the rank was asked to write, or reported: what landed per stripe and the reports of what was sent.
	private final ConcurrentHashMap<Long, FenceBook> books = new ConcurrentHashMap<>();
	// Failed rooms whose abort is not answered on every stripe yet.
	private final ConcurrentHashMap<Long, FenceQuiet> quiets = new ConcurrentHashMap<>();
	// Stripe 0's connection.
	private volatile KVConnection first;
	// Once every stripe closed: nothing more lands from this rank.
	private volatile boolean closed;
	// Guarded by this.
	private final KVConnection[] connections;
	private int unclosed;
	private String closing;
	private CloseReason closedBy;
	// A stripe's heartbeat loss, if any: the rank counts as lost to silence once, however many stripes saw it.
	private CloseReason silentBy;

	/**
	 * @param endpoints where the rank listens, one per network interface, the first for stripe 0 (at least one)
	 * @param width how many stripes reach the rank
	 * @param checksums whether a CRC32C of what lands is kept and compared with the rank's reports
	 */
	public DialledConnection(KVTransport transport, List<HostPort> endpoints, int width, boolean checksums,
			Peer peer) {
		if (endpoints.isEmpty()) {
			throw new IllegalArgumentException("endpoints : none (expected: at least one)");
		}
		this.transport = transport;
		this.endpoints = List.copyOf(endpoints);
		this.endpoint = this.endpoints.get(0);
		this.checksums = checksums;
		this.peer = peer;
		this.stripes = new DialledStripe[width];
		for (int i = 0; i < width; i++) {
			stripes[i] = new DialledStripe(this, i);
		}
		this.connections = new KVConnection[width];
	}

	/** @return how many stripes reach the rank (the handshake tells prefill) */
	public int width() {
		return stripes.length;
	}

	/** @return whether a report on the control stripe follows every byte the rank sent before it */
	public boolean reportsFollowBytes() {
		return stripes.length == 1;
	}

	/** Connects stripe 0. */
	public Mono<Void> open() {
		return transport.connect(endpoint, stripes[0])
				.switchIfEmpty(Mono.error(() -> new ProtocolException("the transport ended the connect to prefill rank "
						+ endpoint + " without a connection")))
				.flatMap(conn -> {
					first = conn;
					peer.onConnected();
					if (!attach(stripes[0], conn)) {
						return Mono.error(new ProtocolException("connection to prefill rank " + endpoint
								+ " closed at once"));
					}
					return Mono.empty();
				});
	}

	/** Opens the further stripes, each joining with the token of stripe 0's handshake. */
	public Mono<Void> join(long token) {
		if (stripes.length == 1) {
			return Mono.empty();
		}
		return Flux.range(1, stripes.length - 1)
				.flatMap(i -> transport.connect(endpointOf(i), stripes[i]).flatMap(conn -> {
					if (!attach(stripes[i], conn)) {
						return Mono.error(new ProtocolException("connection to prefill rank " + endpoint
								+ " closed while its stripes joined"));
					}
					conn.send(new KVMessage.Join(token, i), SendGate.OPEN, SendListener.ifFailed(e -> conn.close(
							"could not send the join of stripe " + i + ": " + describe(e))));
					return stripes[i].joined.asMono();
				}))
				.then();
	}

	/** @return where stripe {@code i} is dialled: the rank's endpoints taken in turn */
	HostPort endpointOf(int i) {
		return endpoints.get(i % endpoints.size());
	}

	/** @return the stripe for messages, with the endpoint it was dialled at when the rank has several */
	private String stripeName(int i) {
		return "stripe " + i + " to prefill rank " + endpoint + (endpoints.size() == 1 ? "" : " at " + endpointOf(i));
	}

	/** Sends a control message on stripe 0. */
	public void send(KVMessage message, SendListener listener) {
		first.send(message, SendGate.OPEN, listener);
	}

	/** @return whether stripe 0 is connected and active */
	public boolean isActive() {
		KVConnection c = first;
		return c != null && c.isActive();
	}

	/** @return whether rooms may still be asked over this connection: connected, active, and not closing */
	public boolean isOpen() {
		KVConnection c = first;
		synchronized (this) {
			return closing == null && closedBy == null && c != null && c.isActive();
		}
	}

	/** @return whether stripe 0 connected (it may have closed since) */
	public boolean isConnected() {
		return first != null;
	}

	/** @return whether every stripe closed */
	public boolean isClosed() {
		return closed;
	}

	/** @return the step of the setup that has not finished, for the reason of its timeout */
	public String stalledAt() {
		return first == null ? "could not be connected to" : "did not let all " + stripes.length + " stripes join";
	}

	/** Closes every stripe. */
	public void close(String reason) {
		synchronized (this) {
			if (closing == null) {
				closing = reason;
			}
		}
		for (KVConnection c : attached()) {
			c.close(reason);
		}
	}

	/** @return completes once every stripe attached so far closed */
	public Mono<Void> closeAll(String reason) {
		List<Mono<Void>> all = new ArrayList<>();
		for (KVConnection c : attached()) {
			c.close(reason);
			all.add(c.onClose());
		}
		return Mono.when(all);
	}

	/** The rank is asked to write the room: its bytes may come on any stripe from now on. */
	public void expect(long room) {
		books.computeIfAbsent(room, r -> new FenceBook(this, r, stripes.length)).asked = true;
	}

	/**
	 * The rank reported the room done on stripe 0, with the bytes and the CRC32C it sent on every stripe and the
	 * stripes that fence it. Once each of their fences arrived (so every byte of the room landed), {@code verdict} gets
	 * null when what landed on stripe 0 is what the rank says it sent there, else why not; possibly at once, on this
	 * thread.
	 */
	public void settle(long room, KVMessage.Status status, Consumer<String> verdict) {
		books.computeIfAbsent(room, r -> new FenceBook(this, r, stripes.length)).settle(status.bytes(),
				status.checksum(), status.fences(), verdict);
	}

	/** The room ended: nothing more of it is expected. */
	public void forget(long room) {
		books.remove(room);
	}

	/**
	 * Calls {@code done} once every stripe said it carries nothing more of the room (an abort acknowledgement, or a
	 * fence or a report for the room after it ended), or once every stripe closed; at once when they all did.
	 */
	public void awaitQuiet(long room, Runnable done) {
		synchronized (this) {
			if (!closed) {
				quiets.put(room, new FenceQuiet(stripes.length, done));
				return;
			}
		}
		done.run();
	}

	/** @return where the room's abort is still unanswered (" on stripe i"), or null when nowhere */
	public String owing(long room) {
		FenceQuiet q = quiets.get(room);
		int stripe = q == null ? -1 : q.owing();
		return stripe < 0 ? null : " on stripe " + stripe;
	}

	/** @return whether a failed room was waiting for the stripe's answer */
	boolean answered(long room, int stripe) {
		FenceQuiet q = quiets.get(room);
		if (q == null) {
			return false;
		}
		// Closing answers every wait too: whichever removes the wait runs it.
		if (q.answered(stripe) && quiets.remove(room, q)) {
			q.done.run();
		}
		return true;
	}

	PayloadSink onData(DialledStripe stripe, DataHeader h) {
		FenceBook book = dataBook(stripe, h.room());
		return book == null ? null : peer.onData(h, book.tally(stripe.index));
	}

	/** A scatter frame's pieces: one room, one stripe, so the stripes' rules are asked once for all of them. */
	void onScatter(DialledStripe stripe, ScatterHeader h, PayloadSink[] sinks) {
		FenceBook book = dataBook(stripe, h.room());
		if (book != null) {
			peer.onScatter(h, book.tally(stripe.index), sinks);
		}
	}

	/** @return the room's book when the stripe may carry its bytes; else null, the peer told why */
	private FenceBook dataBook(DialledStripe stripe, long room) {
		FenceBook book = books.get(room);
		if (book == null || !book.asked) {
			// A Success alone (from a rank asked for nothing, as MLA's dummy ranks are) makes a book too.
			peer.onUnasked(room, "data for room " + room + " on stripe " + stripe.index);
			return null;
		}
		String late = book.lateOn(stripe.index);
		if (late != null) {
			peer.onRoomError(room, FailureCause.PROTOCOL, late);
			return null;
		}
		return book;
	}

	/** A stripe's bytes for a room are over: they must be what landed on it. */
	void onFence(DialledStripe stripe, KVMessage.Fence fence) {
		FenceBook book = books.get(fence.room());
		if (book == null && answered(fence.room(), stripe.index)) {
			return;
		}
		// A rank not asked to write the room (its Success alone made the book) has no bytes to fence.
		if (book == null || !book.asked) {
			peer.onUnasked(fence.room(), "a fence for room " + fence.room() + " on stripe " + stripe.index);
			return;
		}
		if (stripe.index == 0) {
			peer.onRoomError(fence.room(), FailureCause.PROTOCOL, "prefill rank " + endpoint + " sent a fence for room "
					+ fence.room() + " on stripe 0 (expected: only on stripes 1.." + (stripes.length - 1) + ")");
			return;
		}
		book.fence(stripe.index, fence, peer);
	}

	/**
	 * @return how the connection moves a room's bytes: the first stripe's kind and TLS, with the number of stripes
	 *         attached; {@link RoomPath#UNKNOWN} before the first one connected
	 */
	public RoomPath path() {
		List<KVConnection> all = attached();
		if (all.isEmpty()) {
			return RoomPath.UNKNOWN;
		}
		RoomPath first = all.get(0).path();
		boolean tls = first.tls();
		for (KVConnection c : all) {
			tls &= c.path().tls();
		}
		return first.kind() == RoomPath.Kind.UNKNOWN ? RoomPath.UNKNOWN
				: new RoomPath(first.kind(), all.size(), tls);
	}

	/** @return the rank's address, for messages */
	String endpointName() {
		return endpoint.toString();
	}

	/** @return false when the connection is closing: {@code c} is then closed too */
	private boolean attach(DialledStripe stripe, KVConnection c) {
		String reason;
		synchronized (this) {
			connections[stripe.index] = c;
			if (!stripe.ended) {
				// Else it closed before its connect returned, and was counted then.
				unclosed++;
			}
			reason = closing;
		}
		if (reason != null) {
			c.close(reason);
			return false;
		}
		return true;
	}

	private synchronized List<KVConnection> attached() {
		List<KVConnection> list = new ArrayList<>(connections.length);
		for (KVConnection c : connections) {
			if (c != null) {
				list.add(c);
			}
		}
		return list;
	}

	/**
	 * One stripe closed: the others are closed with it, and once the last one closed (nothing of this rank lands any
	 * more) the session hears of it and every abort waiting for the rank is answered.
	 */
	void stripeClosed(DialledStripe stripe, KVConnection c, CloseReason reason) {
		boolean firstClose;
		boolean last;
		CloseReason cause;
		CloseReason counted = null;
		synchronized (this) {
			firstClose = closedBy == null;
			if (firstClose) {
				closedBy = reason;
				if (closing == null) {
					closing = stripeName(stripe.index) + " closed: " + reason;
				}
			}
			if (reason.kind() == CloseReason.Kind.SILENT_PEER) {
				silentBy = reason;
			}
			cause = closedBy;
			stripe.ended = true;
			if (connections[stripe.index] != null) {
				unclosed--;
			}
			last = unclosed == 0 && !closed;
			if (last) {
				closed = true;
				counted = silentBy != null ? silentBy : closedBy;
			}
		}
		if (firstClose) {
			peer.onClosing(reason);
			ProtocolException lost = new ProtocolException("connection to prefill rank " + endpoint + " closed: "
					+ reason);
			for (DialledStripe s : stripes) {
				s.joined.tryEmitError(lost);
			}
			for (KVConnection other : attached()) {
				if (other != c) {
					other.close(stripeName(stripe.index) + " closed: " + reason);
				}
			}
		}
		if (!last) {
			return;
		}
		peer.onClosed(cause, counted);
		// Nothing more can land from this rank: every abort waiting for it is answered.
		for (Long room : quiets.keySet()) {
			FenceQuiet q = quiets.remove(room);
			if (q != null) {
				q.done.run();
			}
		}
	}

	private static String describe(Throwable t) {
		String m = t.getMessage();
		return m == null ? t.getClass().getSimpleName() : m;
	}

	@Override
	public String toString() {
		return "prefill rank " + endpoint + " over " + stripes.length + " stripes" + (endpoints.size() == 1 ? ""
				: " dealt over " + endpoints);
	}
}
