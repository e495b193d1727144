package io.kvferry.internal;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

import io.kvferry.DecodeConfig;
import io.kvferry.HostPort;
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
	// This rank's layout as prefill ranks see it in the handshake.
	final PeerLayout ownLayout;
	// This rank's KV layers and the buffers of each.
	final LayerRegions ownLayers;
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
		this.ownLayout = ownLayout;
		this.ownLayers = LayerRegions.of(config.kvArgs().kvRegions().size(), config.kvArgs().draftLayers(),
				config.kvArgs().isMla());
		this.incarnation = incarnation;
		this.bytesReceived = bytesReceived;
	}
}
