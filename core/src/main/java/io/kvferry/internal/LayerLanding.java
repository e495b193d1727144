package io.kvferry.internal;

import java.util.BitSet;
import java.util.List;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.BooleanSupplier;

import io.kvferry.TopologyException;
import io.kvferry.internal.topology.HeadSlicing;
import io.kvferry.internal.topology.LayerPairing;
import io.kvferry.internal.topology.LayerSpan;
import io.kvferry.internal.topology.RegionPair;
import io.kvferry.spi.PeerLayout;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Scheduler;

/**
 * Decode's view of one room's layers: the KV bytes that landed in each of the rank's KV buffers, against what the
 * room's prefill ranks send into it, and the layers whose buffers (MHA: K and V) all hold their bytes. A layer is
 * emitted once, when its last byte landed, whichever prefill rank wrote it; the stream completes once the room ended.
 * After Success every layer some prefill rank fills was emitted (a room of no pages emits them at Success, when
 * nothing had to land); after a failure only those that were complete before.
 *
 * <p>Counting is lock-free on the connections' threads; a layer's emission and the completion take this object's
 * monitor, which serializes them and under which no other lock is taken. Subscribers only see the stream through
 * {@link #flux(Scheduler)}, on the callback scheduler, so no subscriber code runs here.
 */
final class LayerLanding {

	private static final Logger log = LoggerFactory.getLogger(LayerLanding.class);

	private final long room;
	private final LayerRegions layers;
	private final AtomicLongArray landed;
	private final BooleanSupplier live;
	// Every emitted layer is replayed to late subscribers: at most one item per layer.
	private final Sinks.Many<Integer> sink = Sinks.unsafe().many().replay().all();
	// Set once, when the room asked its prefill ranks (before any byte can land); null before.
	private volatile Expected expected;
	// Guarded by this.
	private final BitSet emitted = new BitSet();
	private boolean ended;

	/**
	 * @param room the room, for log lines
	 * @param layers the rank's layers and their buffers
	 * @param live whether the room still takes bytes (false once it ended): no layer is emitted after
	 */
	LayerLanding(long room, LayerRegions layers, BooleanSupplier live) {
		this.room = room;
		this.layers = layers;
		this.landed = new AtomicLongArray(layers.regionCount());
		this.live = live;
	}

	/**
	 * Bytes per page each KV buffer of a decode rank receives from the prefill ranks that send into it, computed as
	 * they plan their sends: by model layer, and per head slice when the TP sizes differ (replicated heads arrive once
	 * from every rank that holds them).
	 *
	 * @param decode this rank's layout
	 * @param sources the layouts of the prefill ranks that send real bytes (not MLA's dummy ranks)
	 * @throws TopologyException when a source cannot be paired (its handshake would have been refused)
	 */
	static long[] bytesPerPage(PeerLayout decode, List<PeerLayout> sources) {
		long[] perPage = new long[decode.kv().size()];
		int d = decode.parallel().attnTpSize();
		LayerSpan own = new LayerSpan(decode.kv().size(), decode.startLayer(), decode.draftLayers());
		for (PeerLayout p : sources) {
			int tp = p.parallel().attnTpSize();
			boolean sliced = !decode.mla() && tp != d;
			List<RegionPair> pairs = LayerPairing.pairByLayer(
					new LayerSpan(p.kv().size(), p.startLayer(), p.draftLayers()), own, decode.mla());
			for (RegionPair pair : pairs) {
				int srcLen = p.kv().get(pair.src()).itemLen();
				int dstLen = decode.kv().get(pair.dst()).itemLen();
				perPage[pair.dst()] += sliced ? (long) HeadSlicing.plan(p.totalKvHeadNum(), tp, d,
						p.parallel().attnTpRank(), decode.engineRank() % d, srcLen, dstLen, p.pageSize())
						.sliceBytes() * p.pageSize() : dstLen;
			}
		}
		return perPage;
	}

	/**
	 * Sets what the room's pages await; called once, before any of its bytes can land.
	 *
	 * @param perPage bytes per page each KV buffer receives ({@link #bytesPerPage})
	 * @param pages the room's destination pages
	 */
	void expect(long[] perPage, int pages) {
		long[] bytes = new long[perPage.length];
		for (int i = 0; i < perPage.length; i++) {
			bytes[i] = perPage[i] * pages;
		}
		expected = new Expected(perPage, bytes);
	}

	/** Counts {@code n} bytes that landed in KV buffer {@code region}; emits its layer when that completed it. */
	void landed(int region, long n) {
		Expected e = expected;
		if (e == null || region < 0 || region >= e.bytes.length) {
			return;
		}
		long now = landed.addAndGet(region, n);
		if (now >= e.bytes[region] && now - n < e.bytes[region] && live.getAsBoolean()) {
			emitIfComplete(e, layers.layerOf(region));
		}
	}

	private synchronized void emitIfComplete(Expected e, int layer) {
		if (ended || emitted.get(layer)) {
			return;
		}
		if (!fills(e, layer) || !complete(e, layer)) {
			return;
		}
		emitted.set(layer);
		sink.tryEmitNext(layer);
	}

	/**
	 * Completes the stream once the room ended. After Success a layer with nothing to land (a room of no pages) is
	 * emitted first.
	 *
	 * @param success whether the room succeeded
	 */
	synchronized void end(boolean success) {
		if (ended) {
			return;
		}
		ended = true;
		Expected e = expected;
		if (success && e != null) {
			for (int layer = 0; layer < layers.layers(); layer++) {
				if (emitted.get(layer) || !fills(e, layer)) {
					continue;
				}
				if (complete(e, layer)) {
					emitted.set(layer);
					sink.tryEmitNext(layer);
				}
				else {
					// Success checked every rank's byte count, so the expectation is what is wrong: say so rather
					// than announce a layer whose bytes were not counted.
					log.warn("room {}: layer {} was not counted complete at Success", room, layer);
				}
			}
		}
		sink.tryEmitComplete();
	}

	private boolean complete(Expected e, int layer) {
		for (int r : layers.regions(layer)) {
			if (landed.get(r) < e.bytes[r]) {
				return false;
			}
		}
		return true;
	}

	private boolean fills(Expected e, int layer) {
		for (int r : layers.regions(layer)) {
			if (e.perPage[r] == 0) {
				return false;
			}
		}
		return true;
	}

	/** @return the layers that landed so far, then each one as it lands; completes once the room ended */
	Flux<Integer> flux(Scheduler callbacks) {
		return sink.asFlux().publishOn(callbacks);
	}

	private record Expected(long[] perPage, long[] bytes) {
	}
}
