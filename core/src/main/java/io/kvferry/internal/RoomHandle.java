package io.kvferry.internal;

import io.kvferry.KVPoll;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/** The part of a sender or receiver that only reads its room. */
abstract class RoomHandle<R extends Room> {

	final R room;

	RoomHandle(R room) {
		this.room = room;
	}

	public long room() {
		return room.id;
	}

	public KVPoll poll() {
		return room.state();
	}

	public Flux<KVPoll> states() {
		return room.states();
	}

	public Mono<Void> completion() {
		return room.completion();
	}

	@Override
	public String toString() {
		return getClass().getSimpleName() + "{room=" + room.id + ", state=" + room.state() + '}';
	}
}
