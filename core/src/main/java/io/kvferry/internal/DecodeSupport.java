package io.kvferry.internal;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

import io.kvferry.DecodeConfig;
import io.kvferry.HostPort;
import io.kvferry.KVArgs;
import io.kvferry.spi.PeerLayout;

/**
 * What every session and room of a decode rank needs of its manager, in one object handed to each of them once: the
 * configuration, the rank's name, layout and incarnation, its counters, and what the rank learnt of prefill instances
 * that rooms cite in their reasons (a drain a rank announced, a look-up that keeps failing). The manager keeps what is
 * its own (resolving, admitting, the sessions and the ranks' incarnations and breakers, draining, closing); nothing
 * here calls back into it.
 */
final class DecodeSupport {

	final DecodeConfig config;
	final String name;
	// The regions rooms land in now; replaced as a whole when the manager re-registers them, so that a room (which
	// reads it once, as it is made) never mixes two generations.
	volatile Registered registered;
	final long incarnation;
	final LongAdder bytesReceived;
	// Prefill ranks that announced a drain, with the reason: once such a rank is gone, a room that cannot reach it
	// fails because it drained, not with a bare "connection refused". One entry per rank endpoint, replaced by its next
	// drain; entries are small and ranks few.
	final ConcurrentHashMap<HostPort, String> drained = new ConcurrentHashMap<>();
	// The last failure of each instance's look-up while it is retried: rooms that time out waiting for it name it.
	final ConcurrentHashMap<HostPort, String> lookUpFailures = new ConcurrentHashMap<>();

	DecodeSupport(DecodeConfig config, String name, PeerLayout ownLayout, long incarnation, LongAdder bytesReceived) {
		this.config = config;
		this.name = name;
		this.registered = new Registered(config.kvArgs(), ownLayout, 0);
		this.incarnation = incarnation;
		this.bytesReceived = bytesReceived;
	}

	/**
	 * One generation of this rank's regions.
	 *
	 * @param args the regions and their layout
	 * @param layout the layout as prefill ranks see it in the handshake
	 * @param layers this rank's KV layers and the buffers of each
	 * @param generation 0 for the regions the manager started with, then one more per re-registration
	 */
	record Registered(KVArgs args, PeerLayout layout, LayerRegions layers, int generation) {

		Registered(KVArgs args, PeerLayout layout, int generation) {
			this(args, layout, LayerRegions.of(args.kvRegions().size(), args.draftLayers(), args.isMla()), generation);
		}
	}
}
