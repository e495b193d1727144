package io.kvferry.internal;

import java.util.BitSet;
import java.util.List;
import java.util.function.BooleanSupplier;

import io.kvferry.TopologyException;
import io.kvferry.internal.topology.HeadSlicing;
import io.kvferry.internal.topology.LayerPairing;
import io.kvferry.internal.topology.LayerSpan;
import io.kvferry.internal.topology.RegionPair;
import io.kvferry.spi.PeerLayout;
import io.kvferry.spi.RegionKind;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Scheduler;

/**
 * Decode's view of one room's layers: a layer is emitted once, when every KV buffer it owns (MHA: K and V) holds all
 * the bytes the room's ledger expects there, whichever prefill rank wrote them; the stream completes once the room
 * ended. The ledger refuses any byte written more often than planned, so a buffer whose landed count reached its
 * expectation holds every granted byte. After Success every layer the room fills was emitted (a room of no pages emits
 * them at Success, when nothing had to land); after a failure only those that were complete before.
 *
 * <p>Counting is lock-free on the connections' threads; a layer's emission and the completion take this object's
 * monitor, which serializes them and under which no other lock is taken. Subscribers only see the stream through
 * {@link #flux(Scheduler)}, on the callback scheduler, so no subscriber code runs here.
 */
final class LayerLanding {

	private final LayerRegions layers;
	private final BooleanSupplier live;
	// Every emitted layer is replayed to late subscribers: at most one item per layer.
	private final Sinks.Many<Integer> sink = Sinks.unsafe().many().replay().all();
	// Set once, when the room asked its prefill ranks (before any byte can land); null before.
	private volatile GrantLedger ledger;
	// Guarded by this.
	private final BitSet emitted = new BitSet();
	private boolean ended;

	/**
	 * @param layers the rank's layers and their buffers
	 * @param live whether the room still takes bytes (false once it ended): no layer is emitted after
	 */
	LayerLanding(LayerRegions layers, BooleanSupplier live) {
		this.layers = layers;
		this.live = live;
	}

	/**
	 * Bytes per page each KV buffer of a decode rank receives from the prefill ranks that send into it, computed as
	 * they plan their sends: by model layer, and per head slice when the TP sizes differ (replicated heads arrive once
	 * from every rank that holds them).
	 *
	 * @param decode this rank's layout
	 * @param sources the layouts of the prefill ranks that send real bytes (not MLA's dummy ranks)
	 * @return per KV buffer, its bytes per page; shared between callers, never to be written
	 * @throws TopologyException when a source cannot be paired (its handshake would have been refused)
	 */
	static long[] bytesPerPage(PeerLayout decode, List<PeerLayout> sources) {
		// Every room of a session asks with the same layout objects: the last answer serves them all.
		PerPage last = lastPerPage;
		if (last != null && last.answers(decode, sources)) {
			return last.perPage;
		}
		long[] perPage = computeBytesPerPage(decode, sources);
		lastPerPage = new PerPage(decode, List.copyOf(sources), perPage);
		return perPage;
	}

	private static volatile @Nullable PerPage lastPerPage;

	private record PerPage(PeerLayout decode, List<PeerLayout> sources, long[] perPage) {

		boolean answers(PeerLayout d, List<PeerLayout> s) {
			if (d != decode || s.size() != sources.size()) {
				return false;
			}
			for (int i = 0; i < s.size(); i++) {
				if (s.get(i) != sources.get(i)) {
					return false;
				}
			}
			return true;
		}
	}

	private static long[] computeBytesPerPage(PeerLayout decode, List<PeerLayout> sources) {
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
						p.parallel().attnTpRank(), decode.engineRank() % d, srcLen, dstLen, p.pageSize(),
						decode.pageSize()).sliceBytes() * decode.pageSize() : dstLen;
			}
		}
		return perPage;
	}

	/** Sets the room's ledger; called once, before any of its bytes can land. */
	void expect(GrantLedger roomLedger) {
		ledger = roomLedger;
	}

	/** Emits the layer of KV buffer {@code region}, whose bytes just became complete, if its other buffers are too. */
	void landed(int region) {
		GrantLedger l = ledger;
		if (l != null && region >= 0 && region < layers.regionCount() && live.getAsBoolean()) {
			int layer = layers.layerOf(region);
			if (fills(l, layer) && complete(l, layer)) {
				emitIfComplete(l, layer);
			}
		}
	}

	private synchronized void emitIfComplete(GrantLedger l, int layer) {
		if (ended || emitted.get(layer)) {
			return;
		}
		emitted.set(layer);
		sink.tryEmitNext(layer);
	}

	/**
	 * Completes the stream once the room ended. After Success (which the ledger allows only once every granted byte
	 * landed) a layer not yet emitted, as in a room of no pages, is emitted first.
	 *
	 * @param success whether the room succeeded
	 */
	synchronized void end(boolean success) {
		if (ended) {
			return;
		}
		ended = true;
		GrantLedger l = ledger;
		if (success && l != null) {
			for (int layer = 0; layer < layers.layers(); layer++) {
				if (!emitted.get(layer) && fills(l, layer) && complete(l, layer)) {
					emitted.set(layer);
					sink.tryEmitNext(layer);
				}
			}
		}
		sink.tryEmitComplete();
	}

	private boolean complete(GrantLedger l, int layer) {
		for (int r : layers.regions(layer)) {
			if (l.landed(RegionKind.KV, r) < l.expected(RegionKind.KV, r)) {
				return false;
			}
		}
		return true;
	}

	/** Whether the room's prefill ranks write the layer at all (else it is never emitted). */
	private boolean fills(GrantLedger l, int layer) {
		for (int r : layers.regions(layer)) {
			if (l.times(RegionKind.KV, r) == 0) {
				return false;
			}
		}
		return true;
	}

	/** @return the layers that landed so far, then each one as it lands; completes once the room ended */
	Flux<Integer> flux(Scheduler callbacks) {
		return sink.asFlux().publishOn(callbacks);
	}

}
