package io.kvferry.internal;

import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import reactor.core.Disposable;
import reactor.core.Disposables;
import reactor.core.publisher.Sinks;

/**
 * A failed decode room's prefill ranks that may still write its pages: the pages are released once each of them went
 * quiet (acknowledged the abort on every connection, reported the room ended, or lost its connection). A rank that
 * stays silent past the handshake timeout is disconnected, since only a closed connection guarantees that no byte of
 * the room lands any more.
 */
final class AbortWait {

	private final DecodeSupport support;
	private final long room;
	private final Set<DecodeSession> pending;
	private final Sinks.Empty<Void> released;
	// The ranks still owing, plus one for start() itself, so that no early answer releases the room mid-way.
	private final AtomicInteger owed;
	// Cancelled once every rank went quiet: left to fire, it would keep the ended room reachable until the timeout.
	private volatile Disposable timeout = Disposables.disposed();

	AbortWait(DecodeSupport support, long room, Set<DecodeSession> pending, Sinks.Empty<Void> released) {
		this.support = support;
		this.room = room;
		this.pending = pending;
		this.released = released;
		this.owed = new AtomicInteger(pending.size() + 1);
	}

	/**
	 * Waits for the pending ranks, then tells {@code targets} (every rank not known to be done) of the abort.
	 *
	 * @param how how the room ended, which the ranks are told
	 */
	void start(Set<DecodeSession> targets, RoomTable.Ended how) {
		for (DecodeSession s : pending) {
			s.connection.awaitQuiet(room, this::quiet);
		}
		if (!pending.isEmpty()) {
			timeout = support.config.timer().schedule(this::expire, support.config.handshakeTimeout().toNanos(),
					TimeUnit.NANOSECONDS);
		}
		for (DecodeSession s : targets) {
			s.abort(room, how);
		}
		quiet();
	}

	private void quiet() {
		if (owed.decrementAndGet() == 0) {
			// start() counts itself last, after the timer is set: the timer is there to cancel by now.
			timeout.dispose();
			released.tryEmitEmpty();
		}
	}

	private void expire() {
		for (DecodeSession s : pending) {
			String owing = s.connection.owing(room);
			if (owing != null) {
				s.close("prefill rank " + s.endpoint + " did not acknowledge the abort of room " + room + owing
						+ " within " + support.config.handshakeTimeout() + "; closing so that no byte of the room "
						+ "can land");
			}
		}
	}
}
