package io.kvferry.internal;

import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongFunction;

import io.kvferry.FailureCause;
import io.kvferry.HostPort;
import io.kvferry.ParallelLayout;
import io.kvferry.ProtocolException;
import io.kvferry.TopologyException;
import io.kvferry.bootstrap.PrefillParallelInfo;
import io.kvferry.bootstrap.RankRoute;
import io.kvferry.internal.stripe.DialledConnection;
import io.kvferry.internal.stripe.Tally;
import io.kvferry.internal.topology.LayerPairing;
import io.kvferry.internal.topology.LayerSpan;
import io.kvferry.spi.CloseReason;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.FailureCodes;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.PayloadSink;
import io.kvferry.spi.PeerLayout;
import io.kvferry.spi.ScatterHeader;
import io.kvferry.spi.SendListener;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * Decode's session with one prefill rank: the handshake (checked against the layout the bootstrap server described),
 * the rooms asked of the rank, its reports and its drain notice. The rank's bytes go straight to their room (an
 * {@link Inbox}); how many transport connections reach the rank is the {@link DialledConnection}'s business. What it
 * needs of its manager is the {@link DecodeSupport}, and what it tells the manager goes through its {@link Owner}.
 */
final class DecodeSession implements DialledConnection.Peer {

	private static final Logger log = LoggerFactory.getLogger(DecodeSession.class);

	/** What a session tells the manager that keeps it: its table of sessions, and the ranks' incarnations. */
	interface Owner {

		/** The session's first connection is up: it counts as open. */
		void connected(DecodeSession s);

		/** The session never opened, or its connection closed: it is no longer open. */
		void gone(DecodeSession s);

		/** The session's connection started closing: it is no longer the one to ask. */
		void closing(DecodeSession s);

		/** Every connection of the session closed; {@code counted} is what the rank is counted lost to. */
		void closed(DecodeSession s, CloseReason counted);

		/**
		 * @param how where the incarnation came from, for the reason
		 * @return the refusal of a rank that shows an incarnation another one replaced, else null
		 */
		PeerRefusedException refuseRetired(SessionKey key, long incarnation, String how);

		/** Records the incarnation a rank showed: another one than the known means it restarted. */
		void observeIncarnation(SessionKey key, long incarnation, String how);

		/** Forgets an instance's sizes and routes: they no longer match its ranks. */
		void forgetInstance(HostPort bootstrap);
	}

	/** A room as its session hands it what the rank sends for it: the decode room. */
	interface Inbox {

		/** @return whether the room asked {@code s} to write its pages; lock-free */
		boolean writtenBy(DecodeSession s);

		/**
		 * @param tally what landed of the room on the header's path
		 * @return where the payload lands, or null to drop it
		 */
		PayloadSink accept(DecodeSession from, DataHeader h, Tally tally);

		/**
		 * A scatter frame's pieces from {@code from}: sets each piece's sink in {@code sinks} (handed filled with
		 * null), as {@link #accept(DecodeSession, DataHeader, Tally)} would piece by piece.
		 */
		void accept(DecodeSession from, ScatterHeader h, Tally tally, PayloadSink[] sinks);

		/** @return false when the room is live and did not ask the rank */
		boolean reported(DecodeSession s, KVMessage.Status status);

		/** @return whether the room ended: a late frame for it is let pass */
		boolean hasEnded();

		/** A frame for the room broke the rules of its stripes: the room fails. */
		void brokenFrame(FailureCause cause, String reason);
	}

	private final DecodeSupport support;
	private final Owner owner;
	// The rooms of the manager, by id.
	private final LongFunction<? extends Inbox> inboxes;
	final SessionKey key;
	final HostPort endpoint;
	private final PrefillParallelInfo info;
	// The session table's entry this session was made for: only it may be removed by this session's end.
	final Mono<DecodeSession> entry;
	final Set<Room> rooms = ConcurrentHashMap.newKeySet();
	// Rooms in flight with this rank, against the manager's bound per prefill rank.
	final AtomicInteger admitted = new AtomicInteger();
	private final Sinks.Empty<Void> handshake = Sinks.empty();
	final DialledConnection connection;
	// The rank's layout from its handshake: which layers and heads it sends, whether decode pulls from all its CP
	// ranks.
	volatile PeerLayout prefill;
	// Why the rank admits no new rooms, once it said it drains; it keeps serving the rooms it holds.
	volatile String draining;
	// Names the session when the connection's further paths join.
	private volatile long token;
	// Which process of the rank this session reaches: the registration's incarnation until the handshake tells.
	volatile long incarnation;
	// Why the session was replaced, once another incarnation of the rank showed up: its rooms fail as restarted.
	private volatile String restarted;
	// Why the rank was cut off for breaking the protocol: its rooms fail as protocol errors.
	private volatile String broke;
	// Renews the leases of this session's rooms while the rank holds them on leases.
	private final LeaseRenewals renewals;
	// Orders the handshake and the announcements of new regions, so that the rank hears each generation once, in order.
	private final Object announcing = new Object();
	// The generation of this rank's regions the rank was last told of; -1 before the handshake. Guarded by announcing.
	private int announced = -1;

	/**
	 * @param inboxes the manager's rooms by id (null when unknown or ended)
	 * @param route where the rank listens: its stripes are dealt over the route's endpoints
	 * @param entry the session table's entry this session is made for
	 */
	DecodeSession(DecodeSupport support, Owner owner, LongFunction<? extends Inbox> inboxes, SessionKey key,
			RankRoute route, PrefillParallelInfo info, Mono<DecodeSession> entry) {
		this.support = support;
		this.owner = owner;
		this.inboxes = inboxes;
		this.key = key;
		this.endpoint = route.endpoint();
		this.incarnation = route.incarnation();
		this.info = info;
		this.entry = entry;
		this.connection = new DialledConnection(support.config.transport(), route.endpoints(), support.config.stripes(),
				support.config.checksums(), this);
		this.renewals = new LeaseRenewals(connection, rooms, support.config.timer());
	}

	/**
	 * Connects, shakes hands and opens the whole connection, within one deadline on the manager's timer: the
	 * transport's own connect and handshake timers run on the event loop that makes the connection, so a loop that
	 * never gets to it would hold the session, and every room waiting on it, until the rooms' timeout.
	 */
	Mono<DecodeSession> open() {
		Duration limit = support.config.handshakeTimeout();
		return connection.open()
				.doOnError(e -> owner.gone(this))
				.then(Mono.defer(() -> {
					hello();
					return handshake.asMono().then(Mono.defer(() -> connection.join(token)));
				}))
				.timeout(limit, Mono.error(() -> new ProtocolException("prefill rank " + endpoint + " " + stalledAt()
						+ " within " + limit)), support.config.timer())
				.onErrorMap(this::drainedAndGone)
				.doOnError(e -> close(Failures.describe(e)))
				.thenReturn(this);
	}

	/** Sends the handshake with this rank's regions as they are now. */
	private void hello() {
		synchronized (announcing) {
			DecodeSupport.Registered own = support.registered;
			announced = own.generation();
			connection.send(new KVMessage.Hello(KVMessage.PROTOCOL_VERSION, own.layout(), support.config.checksums(),
					connection.width(), support.incarnation), SendListener.ifFailed(e -> connection.close(
							"could not send the handshake: " + Failures.describe(e))));
		}
	}

	/**
	 * Tells the rank this rank's regions as they are now, once they changed since its handshake or the last
	 * announcement; a session that has not sent its handshake yet tells them there. Sent on stripe 0 before any request
	 * made against them, so the rank plans every later request with them.
	 */
	void announce() {
		synchronized (announcing) {
			DecodeSupport.Registered own = support.registered;
			if (announced < 0 || announced >= own.generation()) {
				return;
			}
			announced = own.generation();
			connection.send(new KVMessage.Layout(own.generation(), own.layout()), SendListener.ifFailed(e -> close(
					"could not send the layout of generation " + own.generation() + ": " + Failures.describe(e))));
		}
	}

	/**
	 * A rank that said it drains and then went away is not an unexplained connection failure, whether it no longer
	 * listens or its listener, still closing, took the connection and dropped it before answering the handshake. The
	 * rank's own answers (a refused handshake, another incarnation) stay what they are.
	 */
	private Throwable drainedAndGone(Throwable e) {
		String reason = support.drained.get(endpoint);
		return reason == null || e instanceof TopologyException || e instanceof PeerRefusedException ? e
				: new DrainedRankException("prefill rank " + endpoint + " drained (" + reason + ") and is gone: "
						+ Failures.describe(e), e);
	}

	@Override
	public void onConnected() {
		owner.connected(this);
	}

	/** @return the step of the session's setup that has not finished, for the reason of its timeout */
	private String stalledAt() {
		return prefill == null && connection.isConnected() ? "did not answer the handshake" : connection.stalledAt();
	}

	/** The rank restarted: closes the whole connection, and its rooms fail as restarted with {@code reason}. */
	void replaced(String reason) {
		restarted = reason;
		connection.close(reason);
	}

	/** Closes the whole connection. */
	void close(String reason) {
		connection.close(reason);
	}

	/** @return whether rooms may still be asked over this session */
	boolean isUsable() {
		return connection.isOpen();
	}

	/** Sends a request; a failure to send is reported to {@code failed}. */
	void send(KVMessage message, SendListener listener) {
		connection.send(message, listener);
	}

	/**
	 * Fails a room whose connection went. A rank that said it drains closes once it served what it held: a room it
	 * had not taken yet fails because the rank drained, and says so.
	 */
	void lost(Room r, String what, FailureCause cause) {
		String reason = draining;
		if (reason == null) {
			r.fail(cause, what, false);
		}
		else {
			r.fail(FailureCause.DRAINING, what + " (" + reason + ")", true);
		}
	}

	/**
	 * Tells the rank to stop the room, and why (its cause and, for an overload, the hint); once the connection closed
	 * there is no one to tell, and nothing can land.
	 */
	void abort(long room, RoomTable.Ended how) {
		if (connection.isClosed()) {
			return;
		}
		KVMessage.Abort abort = new KVMessage.Abort(room, how.reason(), FailureCodes.code(how.cause()),
				Overload.millis(how.retryAfter()));
		// Not sent: the connection is going, and its closing answers the abort.
		connection.send(abort, SendListener.ifFailed(e -> close("could not send the abort of room " + room + ": "
				+ Failures.describe(e))));
	}

	@Override
	public boolean onMessage(KVMessage message) {
		if (message instanceof KVMessage.HelloAck ack) {
			PeerRefusedException retired = owner.refuseRetired(key, ack.incarnation(),
					"its handshake from " + endpoint);
			if (retired != null) {
				handshake.tryEmitError(retired);
				return true;
			}
			// The rank answers again: a drain it announced before is over (a drain still going is announced anew,
			// after this answer).
			support.drained.remove(endpoint);
			token = ack.token();
			if (ack.incarnation() != Incarnation.UNKNOWN) {
				incarnation = ack.incarnation();
			}
			owner.observeIncarnation(key, ack.incarnation(), "its handshake from " + endpoint);
			onHelloAck(ack.layout());
			if (prefill != null && ack.leaseMillis() != KVMessage.NO_LEASE) {
				renewals.every(Math.max(1, ack.leaseMillis() / 3));
			}
		}
		else if (message instanceof KVMessage.Reject reject) {
			// A rejected handshake names the incompatible values: the two layouts cannot work together.
			handshake.tryEmitError(new TopologyException(reject.reason()));
		}
		else if (message instanceof KVMessage.Status status) {
			Inbox r = inboxes.apply(status.room());
			if (r != null && !r.reported(this, status)) {
				unasked(status.room(), "a report on room " + status.room());
			}
		}
		else if (message instanceof KVMessage.Draining d) {
			String before;
			// Every path carries the notice: log it once.
			synchronized (this) {
				before = draining;
				draining = d.reason();
			}
			support.drained.put(endpoint, d.reason());
			if (before == null) {
				log.info("[{}] prefill rank {} drains: {}", support.name, endpoint, d.reason());
			}
		}
		else {
			return false;
		}
		return true;
	}

	/**
	 * The rank must be the one the bootstrap server named, in the instance it described: a prefill instance relaunched
	 * with other sizes behind a bootstrap server that kept the old ones would otherwise be planned with the wrong rank
	 * mapping (pages missing heads, too few responses counted).
	 */
	private void onHelloAck(PeerLayout layout) {
		ParallelLayout p = layout.parallel();
		String mismatch = null;
		if (p.attnTpSize() != info.attnTpSize() || p.ppSize() != info.ppSize() || p.dpSize() != info.dpSize()
				|| layout.pageSize() != info.pageSize()) {
			mismatch = "prefill rank " + endpoint + " runs attn_tp_size=" + p.attnTpSize() + " dp_size=" + p.dpSize()
					+ " pp_size=" + p.ppSize() + " page_size=" + layout.pageSize() + ", but bootstrap server "
					+ key.bootstrap() + " described the instance as attn_tp_size=" + info.attnTpSize() + " dp_size="
					+ info.dpSize() + " pp_size=" + info.ppSize() + " page_size=" + info.pageSize()
					+ " (it keeps the sizes of the first registration: restart it after relaunching prefill with "
					+ "other sizes)";
		}
		else if (p.attnTpRank() != key.tp() || p.ppRank() != key.pp() || p.dpGroup() != key.dp()
				|| p.attnCpRank() != key.cp()) {
			mismatch = "prefill rank " + endpoint + " is dp " + p.dpGroup() + " cp " + p.attnCpRank() + " tp "
					+ p.attnTpRank() + " pp " + p.ppRank() + ", but bootstrap server " + key.bootstrap()
					+ " named it for dp " + key.dp() + " cp " + key.cp() + " tp " + key.tp() + " pp " + key.pp();
		}
		if (mismatch != null) {
			owner.forgetInstance(key.bootstrap());
			handshake.tryEmitError(new TopologyException(mismatch));
			return;
		}
		// Prefill compared the fingerprints before it answered; decode judges by its own comparison all the same.
		// The regions' shape and model stay the same over re-registrations: any generation's layout judges the pairing.
		PeerLayout own = support.registered.layout();
		String model = ModelFingerprint.mismatch(ModelFingerprint.of(layout), ModelFingerprint.of(own));
		if (model != null) {
			handshake.tryEmitError(new TopologyException("prefill rank " + endpoint + ": " + model));
			return;
		}
		if (p.ppSize() == own.parallel().ppSize()) {
			// The rank alone fills this rank's layers: one it lacks would be waited for, or never written.
			try {
				LayerPairing.checkSameLayers(new LayerSpan(layout.kv().size(), layout.startLayer(),
						layout.draftLayers()), new LayerSpan(own.kv().size(), own.startLayer(), own.draftLayers()),
						own.mla());
			}
			catch (TopologyException e) {
				handshake.tryEmitError(new TopologyException("prefill rank " + endpoint + ": " + e.getMessage()));
				return;
			}
		}
		this.prefill = layout;
		// Regions re-registered after the handshake went out, before this session counted as open, are told now.
		announce();
		handshake.tryEmitEmpty();
	}

	@Override
	public PayloadSink onData(DataHeader header, Tally tally) {
		Inbox r = writing(header.room());
		return r == null ? null : r.accept(this, header, tally);
	}

	@Override
	public void onScatter(ScatterHeader header, Tally tally, PayloadSink[] sinks) {
		Inbox r = writing(header.room());
		if (r != null) {
			r.accept(this, header, tally, sinks);
		}
	}

	/** @return the room when it asked this rank to write it; else null, and a live room's rank broke the rules */
	private Inbox writing(long room) {
		Inbox r = inboxes.apply(room);
		if (r != null && !r.writtenBy(this)) {
			unasked(room, "data for room " + room);
			return null;
		}
		return r;
	}

	@Override
	public void onRoomError(long room, FailureCause cause, String reason) {
		Inbox r = inboxes.apply(room);
		if (r != null && !r.writtenBy(this)) {
			unasked(room, "a frame for room " + room + " that breaks its rules (" + reason + ")");
		}
		else if (r != null) {
			r.brokenFrame(cause, reason);
		}
	}

	@Override
	public void onUnasked(long room, String what) {
		unasked(room, what);
	}

	/**
	 * A frame from the rank named a room that did not ask the rank for what the frame is about. The room is not to
	 * blame, whoever the rank is: a room that ended or that this rank does not know lets a late frame pass; a live one
	 * means the rank broke the protocol, and the rank's connection is closed (its own rooms fail with it).
	 */
	private void unasked(long room, String what) {
		Inbox r = inboxes.apply(room);
		if (r == null || r.hasEnded()) {
			return;
		}
		String why = "prefill rank " + endpoint + " sent " + what + ", which decode did not ask it for";
		log.warn("[{}] {}: closing its connection", support.name, why);
		broke = why;
		connection.close(why);
	}

	@Override
	public void onClosing(CloseReason reason) {
		renewals.stop();
		owner.closing(this);
		handshake.tryEmitError(new ProtocolException("connection to prefill rank " + endpoint + " closed: " + reason));
	}

	@Override
	public void onClosed(CloseReason cause, CloseReason counted) {
		renewals.stop();
		owner.closed(this, counted);
		String replacedBy = restarted;
		String brokeWith = broke;
		for (Room r : rooms) {
			if (replacedBy != null) {
				lost(r, "Room " + r.id + " was asked of a process that is gone: " + replacedBy,
						FailureCause.PEER_RESTARTED);
			}
			else if (brokeWith != null) {
				r.fail(FailureCause.PROTOCOL, "Room " + r.id + " was asked of a rank cut off for breaking the "
						+ "protocol: " + brokeWith);
			}
			else {
				lost(r, "Lost connection with prefill rank " + endpoint + ": " + cause, Failures.lostWith(cause));
			}
		}
		rooms.clear();
	}

	@Override
	public String toString() {
		return "session with prefill rank " + endpoint;
	}
}
