package io.kvferry.internal.stripe;

import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Supplier;

import io.kvferry.spi.CloseReason;
import io.kvferry.spi.ConnectionHandler;
import io.kvferry.spi.KVConnection;
import reactor.core.publisher.Mono;

/**
 * The connections a listening rank accepted: each one until it closes, and the peers whose further stripes have not
 * all joined yet, by the token they join with. A handshake on a fresh connection opens a {@link StripedConnection};
 * a join attaches a connection to the one its token names.
 */
public final class AcceptedStripes {

	private final String name;
	private final Supplier<String> draining;
	private final Function<StripedConnection, StripedConnection.Handler> sessions;
	private final Consumer<CloseReason> unjoinedClosed;
	// Every accepted connection until it closes, joined or not: what closing the rank waits for.
	private final Set<AcceptedStripe> links = ConcurrentHashMap.newKeySet();
	// Connections whose further stripes have not all joined yet, by token.
	private final ConcurrentHashMap<Long, StripedConnection> joining = new ConcurrentHashMap<>();
	// Whoever knows a token can join its connection and receive its bytes, so tokens must be unguessable.
	private final SecureRandom tokens = seededRandom();

	/**
	 * @param name the rank's name, for log lines and refusals
	 * @param draining why the rank admits no new rooms, or null: a joining stripe is told at once
	 * @param sessions makes the role engine's handler of a connection that just sent its handshake
	 * @param unjoinedClosed hears of a connection that closed before it belonged to any peer
	 */
	public AcceptedStripes(String name, Supplier<String> draining,
			Function<StripedConnection, StripedConnection.Handler> sessions, Consumer<CloseReason> unjoinedClosed) {
		this.name = name;
		this.draining = draining;
		this.sessions = sessions;
		this.unjoinedClosed = unjoinedClosed;
	}

	/**
	 * @return a generator that draws tokens without touching a file: seeded here, on the caller's thread, so that an
	 *         event loop drawing a token later never blocks on the system's entropy source
	 */
	private static SecureRandom seededRandom() {
		SecureRandom random;
		try {
			random = SecureRandom.getInstance("DRBG");
		}
		catch (NoSuchAlgorithmException e) {
			random = new SecureRandom();
		}
		random.nextLong();
		return random;
	}

	/** @return the handler of a connection the transport just accepted */
	public ConnectionHandler accept(KVConnection connection) {
		AcceptedStripe s = new AcceptedStripe(this, connection);
		links.add(s);
		return s;
	}

	/**
	 * Closes every accepted connection.
	 *
	 * @return completes once all closed: until then queued blocks may still be read from the engine's memory
	 */
	public Mono<Void> close(String reason) {
		List<Mono<Void>> closed = new ArrayList<>();
		for (AcceptedStripe s : links) {
			s.conn.close(reason);
			closed.add(s.conn.onClose());
		}
		return Mono.when(closed);
	}

	String name() {
		return name;
	}

	String drainReason() {
		return draining.get();
	}

	/** @return a new connection whose stripe 0 is {@code control}, with the role engine's handler */
	StripedConnection open(KVConnection control) {
		StripedConnection c = new StripedConnection(this, control);
		c.handler(sessions.apply(c));
		return c;
	}

	/** @return a fresh token that names {@code c} until its stripes all joined */
	long issue(StripedConnection c) {
		long t;
		do {
			t = tokens.nextLong();
		}
		while (t == 0 || joining.putIfAbsent(t, c) != null);
		return t;
	}

	/** @return the connection {@code token} names, while its stripes are joining */
	StripedConnection joining(long token) {
		return joining.get(token);
	}

	void forget(long token, StripedConnection c) {
		joining.remove(token, c);
	}

	void closed(AcceptedStripe s, CloseReason reason, boolean joined) {
		links.remove(s);
		if (!joined) {
			unjoinedClosed.accept(reason);
		}
	}
}
