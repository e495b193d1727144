package io.kvferry.bootstrap.server;

import java.time.Duration;
import java.util.List;

import io.kvferry.HostPort;
import io.kvferry.bootstrap.server.internal.EtcdStoreSupport;
import io.micrometer.core.instrument.MeterRegistry;
import io.netty.handler.ssl.SslContext;
import org.jspecify.annotations.Nullable;

/**
 * What one {@link BootstrapServer} configuration holds; mutated only on a fresh copy, inside
 * {@code BootstrapServer.with}, before it is shared.
 */
final class ServerSettings {

	String host = BootstrapServer.DEFAULT_HOST;
	int port = BootstrapServer.DEFAULT_PORT;
	int maxBodyBytes = BootstrapServer.DEFAULT_MAX_BODY_BYTES;
	Duration idleTimeout = BootstrapServer.DEFAULT_IDLE_TIMEOUT;
	Duration requestTimeout = BootstrapServer.DEFAULT_REQUEST_TIMEOUT;
	Duration dpRankEntryLifetime = BootstrapServer.DEFAULT_DP_RANK_ENTRY_LIFETIME;
	int maxDpRankEntries = BootstrapServer.DEFAULT_MAX_DP_RANK_ENTRIES;
	@Nullable String authToken;
	@Nullable SslContext sslContext;
	@Nullable MeterRegistry meterRegistry;
	int maxConnections = BootstrapServer.DEFAULT_MAX_CONNECTIONS;
	int maxLingeringRefusals = BootstrapServer.DEFAULT_MAX_LINGERING_REFUSALS;
	int ioThreads = BootstrapServer.DEFAULT_IO_THREADS;
	@Nullable List<HostPort> etcdEndpoints;
	@Nullable HostPort instance;
	EtcdStoreSupport.Access etcdAccess = EtcdStoreSupport.Access.NONE;

	ServerSettings copy() {
		ServerSettings copy = new ServerSettings();
		copy.host = host;
		copy.port = port;
		copy.maxBodyBytes = maxBodyBytes;
		copy.idleTimeout = idleTimeout;
		copy.requestTimeout = requestTimeout;
		copy.dpRankEntryLifetime = dpRankEntryLifetime;
		copy.maxDpRankEntries = maxDpRankEntries;
		copy.authToken = authToken;
		copy.sslContext = sslContext;
		copy.meterRegistry = meterRegistry;
		copy.maxConnections = maxConnections;
		copy.maxLingeringRefusals = maxLingeringRefusals;
		copy.ioThreads = ioThreads;
		copy.etcdEndpoints = etcdEndpoints;
		copy.instance = instance;
		copy.etcdAccess = etcdAccess;
		return copy;
	}
}
