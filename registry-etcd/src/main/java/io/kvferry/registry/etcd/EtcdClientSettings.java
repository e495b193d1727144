package io.kvferry.registry.etcd;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

import io.etcd.jetcd.Client;
import io.kvferry.HostPort;
import org.jspecify.annotations.Nullable;

/**
 * What one {@link EtcdBootstrapClient} configuration holds; mutated only on a fresh copy, inside
 * {@code EtcdBootstrapClient.with}, before it is shared.
 */
final class EtcdClientSettings {

	final List<HostPort> endpoints;
	Duration timeout = EtcdBootstrapClient.DEFAULT_TIMEOUT;
	Duration leaseTtl = EtcdBootstrapClient.DEFAULT_LEASE_TTL;
	RegistryKeys keys = new RegistryKeys(RegistryKeys.DEFAULT_PREFIX);
	/** Null for plain {@code http://}. */
	@Nullable EtcdTls tls;
	/** Null for no authentication. */
	EtcdConnection.@Nullable Credentials credentials;
	/** The caller's jetcd client; null: one of the registry's own. */
	@Nullable Client client;

	/** @param endpoints the etcd endpoints, checked by the caller; every copy keeps them */
	EtcdClientSettings(List<HostPort> endpoints) {
		this.endpoints = List.copyOf(endpoints);
	}

	EtcdClientSettings copy() {
		EtcdClientSettings copy = new EtcdClientSettings(endpoints);
		copy.timeout = timeout;
		copy.leaseTtl = leaseTtl;
		copy.keys = keys;
		copy.tls = tls;
		copy.credentials = credentials;
		copy.client = client;
		return copy;
	}

	/** @see EtcdBootstrapClient#parseEndpoints(String) */
	static List<HostPort> parseEndpoints(String text) {
		Objects.requireNonNull(text, "endpoints");
		String list = text.trim();
		if (list.startsWith("etcd://")) {
			list = list.substring("etcd://".length());
		}
		else if (list.contains("://")) {
			throw new IllegalArgumentException("etcd endpoints : '" + text
					+ "' (expected: etcd://host:port[,host:port...])");
		}
		if (list.isEmpty()) {
			throw new IllegalArgumentException("etcd endpoints : '" + text
					+ "' (expected: at least one host:port, as etcd://host:port[,host:port...])");
		}
		return Arrays.stream(list.split(",", -1)).map(part -> {
			try {
				return HostPort.parse(part);
			}
			catch (IllegalArgumentException e) {
				throw new IllegalArgumentException("etcd endpoints : '" + text + "' has '" + part
						+ "' (expected: host:port): " + e.getMessage(), e);
			}
		}).toList();
	}
}
