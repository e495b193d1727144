package io.kvferry.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import io.kvferry.DecodeKVManager;
import io.kvferry.FailureCause;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.KVTransferException;
import io.kvferry.MemoryRegion;
import io.kvferry.PrefillKVManager;
import io.kvferry.harness.KVCluster;
import io.kvferry.harness.KVClusterBuilder;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.netty.util.internal.PlatformDependent;
import org.jspecify.annotations.Nullable;
import reactor.test.StepVerifier;

/**
 * Layer-wise streaming as every transport must carry it, on a one-to-one cluster of {@link #SHAPE}: layers land in
 * the order prefill sends them and {@code layers()} shows each once its bytes are in place; whole and layer-wise
 * chunks mix; an abort between two layers fences the rest. A transport's tests make the cluster and call each
 * scenario.
 */
public final class LayerwiseScenarios {

	/** 4 layers of 8 heads, page size 4, one aux row, one draft layer on decode (never filled: not a room layer). */
	public static final ModelShape SHAPE = new ModelShape(4, 8, 8, 2, 4, false, 1, 64, 0);

	private static final Duration T = Duration.ofSeconds(20);

	private LayerwiseScenarios() {
	}

	/** @return a builder for the cluster the scenarios expect: one prefill and one decode rank of {@link #SHAPE} */
	public static KVClusterBuilder cluster() {
		return KVCluster.builder().shape(SHAPE).capacity(64, 8);
	}

	/**
	 * A whole chunk, then the last chunk layer by layer in the order 2, 0, 3, 1: each layer is emitted right after it
	 * was sent (no earlier, since the order is checked), Success follows the last layer, and {@code layers()}
	 * completes after it. A late subscriber gets the same layers again.
	 */
	public static void layersLandInTheOrderSent(KVCluster c) {
		Room room = new Room(c, 101, new int[] { 3, 4, 5, 9, 10 }, new int[] { 7, 1, 2, 20, 21 });
		int[] first = { 3, 4 };
		int[] rest = { 5, 9, 10 };
		room.sender.send(first, new int[0]);
		StepVerifier.create(room.receiver.layers())
				.then(() -> room.sender.sendLayer(2, rest))
				.expectNext(2)
				.then(() -> room.sender.sendLayer(0, rest))
				.expectNext(0)
				.then(() -> room.sender.sendLayer(3, rest))
				.expectNext(3)
				.then(() -> assertThat(room.receiver.poll()).isNotEqualTo(KVPoll.SUCCESS))
				.then(() -> room.sender.sendLayer(1, rest))
				.expectNext(1)
				.expectComplete()
				.verify(T);
		// The stream completes after the terminal state.
		assertThat(room.receiver.poll()).isEqualTo(KVPoll.SUCCESS);
		StepVerifier.create(room.receiver.completion()).expectComplete().verify(T);
		StepVerifier.create(room.sender.completion()).expectComplete().verify(T);
		StepVerifier.create(room.receiver.layers()).expectNext(2, 0, 3, 1).expectComplete().verify(T);
		assertThat(room.verify()).isNull();
	}

	/**
	 * Layer-wise first chunk, whole middle chunk, layer-wise last chunk: every byte lands, every layer is emitted once,
	 * and the rules of a layer-wise chunk hold (no whole chunk, repeated layer or other pages while one is open).
	 */
	public static void wholeAndLayerwiseChunksMix(KVCluster c) {
		Room room = new Room(c, 102, new int[] { 11, 12, 13, 14, 30, 31 }, new int[] { 40, 41, 5, 6, 7, 50 });
		// Subscribed before any byte: it sees each layer as it lands, on the callback scheduler.
		CompletableFuture<List<Integer>> early = room.receiver.layers().collectList().toFuture();
		int[] a = { 11, 12 };
		int[] b = { 13, 14 };
		int[] last = { 30, 31 };
		room.sender.sendLayer(1, a);
		assertThatThrownBy(() -> room.sender.send(b, new int[0])).isInstanceOf(IllegalStateException.class)
				.hasMessageContaining("1 of 4 layers sent");
		assertThatThrownBy(() -> room.sender.sendLayer(1, a)).isInstanceOf(IllegalStateException.class)
				.hasMessageContaining("layer 1 of the chunk at page 0 was already sent");
		assertThatThrownBy(() -> room.sender.sendLayer(2, b)).isInstanceOf(IllegalStateException.class)
				.hasMessageContaining("other pages");
		assertThatThrownBy(() -> room.sender.sendLayer(4, a)).isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("layer : 4 (expected: 0..3)");
		for (int layer : new int[] { 3, 0, 2 }) {
			room.sender.sendLayer(layer, a);
		}
		room.sender.send(b, new int[0]);
		for (int layer = 0; layer < 4; layer++) {
			room.sender.sendLayer(layer, last);
		}
		StepVerifier.create(room.receiver.completion()).expectComplete().verify(T);
		StepVerifier.create(room.receiver.layers().collectSortedList()).expectNext(List.of(0, 1, 2, 3))
				.expectComplete().verify(T);
		assertThat(early).succeedsWithin(T).satisfies(l -> assertThat(l).containsExactlyInAnyOrder(0, 1, 2, 3));
		assertThat(room.verify()).isNull();
	}

	/**
	 * Decode aborts after layer 0 landed, and prefill sends layers 1 and 2 before it hears of it (the abort is held
	 * back on the way): decode's fence drops every byte of them, {@code layers()} completes with layer 0 only, both sides
	 * fail, and the pages are released only once prefill acknowledged.
	 *
	 * @param held the cluster's decode transport
	 */
	public static void decodeAbortBetweenLayersFencesTheRest(KVCluster c, AbortHoldingTransport held) {
		Room room = new Room(c, 103, new int[] { 1, 2, 3 }, new int[] { 8, 9, 10 });
		held.hold();
		try {
			StepVerifier.create(room.receiver.layers())
					.then(() -> room.sender.sendLayer(0, room.src))
					.expectNext(0)
					.then(() -> room.receiver.abort("the request was cancelled"))
					.expectComplete()
					.verify(T);
			// Not the last layer: prefill would then finish the room before it heard of the abort.
			for (int layer = 1; layer < 3; layer++) {
				room.sender.sendLayer(layer, room.src);
			}
			assertThat(room.sender.poll()).as("prefill before it heard of the abort").isNotEqualTo(KVPoll.FAILED);
			// A second abort is a no-op: the room keeps the first reason.
			room.receiver.abort("again");
		}
		finally {
			held.release();
		}
		// Errors (the pages released) once prefill acknowledged: everything it wrote before reached decode first.
		StepVerifier.create(room.receiver.completion())
				.expectErrorSatisfies(e -> assertThat(((KVTransferException) e).failureCause())
						.isEqualTo(FailureCause.ABORTED))
				.verify(T);
		StepVerifier.create(room.sender.completion())
				.expectErrorSatisfies(e -> assertThat(e).hasMessageContaining("the request was cancelled"))
				.verify(T);
		assertThat(room.layerIsZero(0)).isFalse();
		for (int layer = 1; layer < 4; layer++) {
			assertThat(room.layerIsZero(layer)).as("decode layer %d, sent after the abort or never", layer).isTrue();
		}
	}

	/**
	 * Prefill aborts between two layers: later {@code sendLayer} calls are dropped quietly, decode fails with the
	 * reason, and {@code layers()} completes with the layers that landed before.
	 */
	public static void prefillAbortBetweenLayersEndsTheStream(KVCluster c) {
		Room room = new Room(c, 104, new int[] { 20, 21 }, new int[] { 30, 31 });
		StepVerifier.create(room.receiver.layers())
				.then(() -> room.sender.sendLayer(3, room.src))
				.expectNext(3)
				.then(() -> {
					room.sender.abort("prefill ran out of memory");
					room.sender.sendLayer(0, room.src);
				})
				.expectComplete()
				.verify(T);
		StepVerifier.create(room.receiver.completion())
				.expectErrorSatisfies(e -> assertThat(e).hasMessageContaining("prefill ran out of memory"))
				.verify(T);
		assertThat(room.layerIsZero(0)).isTrue();
	}

	/** One room between the cluster's first prefill rank and its first decode rank. */
	private static final class Room {
		final int[] src;
		final int[] dst;
		final long id;
		final KVSender sender;
		final KVReceiver receiver;
		final RankMemory decodeMemory;

		Room(KVCluster c, long id, int[] src, int[] dst) {
			this.id = id;
			this.src = src;
			this.dst = dst;
			PrefillKVManager prefill = c.prefillManagers().get(0).get(0);
			DecodeKVManager decode = c.decodeManagers().get(0);
			c.prefillMemory().get(0).get(0).fill(id, src, 0, new int[0]);
			decodeMemory = c.decodeMemory().get(0);
			receiver = decode.receiver(c.bootstrapAddress(), id);
			receiver.sendMetadata(dst, 0, new int[0]);
			sender = prefill.sender(id);
			sender.init(src.length, 0);
		}

		@Nullable String verify() {
			return decodeMemory.verify(id, dst, 0, new int[0]);
		}

		/** @return whether the room's pages of decode layer {@code layer} (K and V) hold only zeros */
		boolean layerIsZero(int layer) {
			List<MemoryRegion> kv = decodeMemory.kvArgs().kvRegions();
			// Main K buffers, then main V buffers, then the draft layers'.
			int main = decodeMemory.kvArgs().kvLayerCount();
			for (MemoryRegion r : List.of(kv.get(layer), kv.get(main + layer))) {
				for (int p : dst) {
					for (int off = 0; off < r.itemLen(); off += 8) {
						if (PlatformDependent.getLong(r.itemAddress(p) + off) != 0) {
							return false;
						}
					}
				}
			}
			return true;
		}
	}
}
