package io.kvferry.test.rogue;

import java.util.Arrays;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;

/** A room of either decode rank, as prefill's engine and the test see it. */
final class RogueDecodeRoom {
	final long id;
	final boolean good;
	@Nullable KVReceiver receiver;
	int[] pages = new int[0];
	int aux = -1;
	// What the engine claimed for it.
	@Nullable KVSender sender;
	int[] srcPages = new int[0];
	int srcAux = -1;
	boolean abortedByEngine;
	// The engine served it while its receiver was live (a good room only times out when it was not).
	boolean servedLive;
	volatile @Nullable Throwable error;
	volatile boolean verified;
	volatile long since;
	volatile @Nullable KVPoll senderState;
	// Rogue rooms: the session that asked honestly for exclusive pages, whose bytes the test then checks.
	RogueDecodePeer.@Nullable Session honestly;
	Mono<Void> done = Mono.empty();

	RogueDecodeRoom(long id, boolean good) {
		this.id = id;
		this.good = good;
	}

	@Override
	public String toString() {
		return (good ? "good" : "rogue") + " room " + id + " (pages " + Arrays.toString(pages) + ", aux " + aux
				+ ")";
	}
}
