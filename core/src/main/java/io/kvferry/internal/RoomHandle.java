package io.kvferry.internal;

import io.kvferry.KVPoll;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;

/** The part of a sender or receiver that only reads its room; its subscribers are called on the callback scheduler. */
abstract class RoomHandle<R extends Room> {

	final R room;
	final Scheduler callbacks;

	RoomHandle(R room, Scheduler callbacks) {
		this.room = room;
		this.callbacks = callbacks;
	}

	public long room() {
		return room.id;
	}

	public KVPoll poll() {
		return room.state();
	}

	public Flux<KVPoll> states() {
		return room.states(callbacks);
	}

	public Mono<Void> completion() {
		return room.terminal(callbacks)
				.flatMap(s -> s == KVPoll.SUCCESS ? Mono.<Void>empty() : Mono.error(room.failure()));
	}

	@Override
	public String toString() {
		return getClass().getSimpleName() + "{room=" + room.id + ", state=" + room.state() + '}';
	}
}
