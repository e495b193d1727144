package io.kvferry.internal;

import java.util.List;

import io.kvferry.KVArgs;
import io.kvferry.ParallelLayout;
import io.kvferry.internal.topology.CpSplit;
import io.kvferry.internal.topology.RegionPair;

/**
 * DSA cache layer split (SGLang's {@code enable_dsa_cache_layer_split}): each prefill CP rank holds the KV of a
 * contiguous share of its layers (the first {@code layers mod cp} ranks one layer more) and sends only those, for
 * every page of the room; decode pulls from every CP rank. Draft layers stay with CP rank 0. Stateless.
 */
final class CpLayers {

	private CpLayers() {
	}

	/** @return the pairs whose prefill buffer holds a layer this CP rank owns */
	static List<RegionPair> own(List<RegionPair> pairs, KVArgs args, ParallelLayout own) {
		if (own.attnCpSize() == 1) {
			return pairs;
		}
		int perHalf = args.isMla() ? args.kvRegions().size() : args.kvRegions().size() / 2;
		int layers = args.kvLayerCount();
		int[] range = CpSplit.range(layers, own.attnCpSize(), own.attnCpRank());
		return pairs.stream().filter(p -> {
			int local = p.src() % perHalf;
			return local < layers ? local >= range[0] && local < range[1] : own.attnCpRank() == 0;
		}).toList();
	}
}
