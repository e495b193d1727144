package io.kvferry.internal;

import io.kvferry.KVPoll;
import io.kvferry.KVTransferException;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * One room's state on one manager. State changes go through {@link RoomTable#update}, which applies SGLang's rules
 * under this object's monitor; the room's states replay the latest one to late subscribers, and since states only
 * move forward a room emits at most five values, so a slow subscriber holds at most five.
 */
class Room {

	final long id;
	private final Sinks.Many<KVPoll> states = Sinks.many().replay().latest();

	// Guarded by this.
	private KVPoll state;
	private String reason = "";
	private boolean fromAnotherRank;
	private Disposable timeout;

	Room(long id) {
		this.id = id;
	}

	/** @return the current state, or null before the first update */
	synchronized KVPoll state() {
		return state;
	}

	synchronized String reason() {
		return reason;
	}

	/** @return whether the room failed because a peer said so */
	synchronized boolean isRemoteFailure() {
		return state == KVPoll.FAILED && fromAnotherRank;
	}

	synchronized boolean isTerminal() {
		return state != null && state.isTerminal();
	}

	/** A room that may still send or receive bytes: known and not terminal. */
	synchronized boolean isLive() {
		return state != null && !state.isTerminal();
	}

	Flux<KVPoll> states() {
		return states.asFlux();
	}

	Mono<Void> completion() {
		return states.asFlux().last().flatMap(s -> s == KVPoll.SUCCESS ? Mono.<Void>empty() : Mono.error(failure()));
	}

	synchronized KVTransferException failure() {
		return new KVTransferException(id, reason.isEmpty() ? "Failed due to an unknown reason" : reason,
				fromAnotherRank);
	}

	/**
	 * Applies an update under the room's monitor.
	 *
	 * @return the previous state and whether it changed, or null when the update was ignored
	 */
	synchronized KVPoll[] apply(KVPoll update, String why, boolean remote, Runnable beforeTerminal) {
		KVPoll next = RoomTable.merge(state, update);
		if (next == null || next == state) {
			return null;
		}
		KVPoll previous = state;
		state = next;
		if (next == KVPoll.FAILED) {
			reason = why;
			fromAnotherRank = remote;
		}
		if (next.isTerminal()) {
			// Whoever sees the terminal state must find the room already forgotten.
			beforeTerminal.run();
		}
		// Serialized by the monitor, so the sink never sees concurrent emissions.
		states.tryEmitNext(next);
		if (next.isTerminal()) {
			states.tryEmitComplete();
		}
		return new KVPoll[] { previous, next };
	}

	synchronized void replaceTimeout(Disposable next) {
		if (timeout != null) {
			timeout.dispose();
		}
		timeout = next;
	}
}
