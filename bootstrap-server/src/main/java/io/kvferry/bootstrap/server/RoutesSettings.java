package io.kvferry.bootstrap.server;

import java.time.Duration;
import java.util.List;

import io.kvferry.HostPort;
import io.kvferry.bootstrap.server.internal.EtcdStoreSupport;
import io.micrometer.core.instrument.MeterRegistry;
import org.jspecify.annotations.Nullable;

/**
 * What one {@link BootstrapRoutes} configuration holds; mutated only on a fresh copy, inside
 * {@code BootstrapRoutes.with}, before it is shared.
 */
final class RoutesSettings {

	int maxBodyBytes = BootstrapServer.DEFAULT_MAX_BODY_BYTES;
	Duration dpRankEntryLifetime = BootstrapServer.DEFAULT_DP_RANK_ENTRY_LIFETIME;
	int maxDpRankEntries = BootstrapServer.DEFAULT_MAX_DP_RANK_ENTRIES;
	@Nullable String authToken;
	@Nullable MeterRegistry meterRegistry;
	@Nullable List<HostPort> etcdEndpoints;
	@Nullable HostPort instance;
	EtcdStoreSupport.Access etcdAccess = EtcdStoreSupport.Access.NONE;

	RoutesSettings copy() {
		RoutesSettings copy = new RoutesSettings();
		copy.maxBodyBytes = maxBodyBytes;
		copy.dpRankEntryLifetime = dpRankEntryLifetime;
		copy.maxDpRankEntries = maxDpRankEntries;
		copy.authToken = authToken;
		copy.meterRegistry = meterRegistry;
		copy.etcdEndpoints = etcdEndpoints;
		copy.instance = instance;
		copy.etcdAccess = etcdAccess;
		return copy;
	}
}
