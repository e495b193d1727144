package io.kvferry.bootstrap.server.internal;

import java.util.List;

import io.kvferry.HostPort;
import io.kvferry.registry.etcd.EtcdBootstrapClient;

/**
 * The one place the server reaches into the optional etcd registry module, so that a server without it on the class
 * path fails with a message that says what to add instead of a {@link NoClassDefFoundError}.
 */
public final class EtcdStoreSupport {

	private static final String MISSING = "the etcd registry needs io.kvferry:kvferry-registry-etcd on the class path "
			+ "(the standalone bootstrap server jar has it)";

	private EtcdStoreSupport() {
	}

	/**
	 * @param endpoints {@code etcd://host:port[,host:port...]}
	 * @return the endpoints
	 * @throws IllegalArgumentException naming the part that is not a {@code host:port}
	 */
	public static List<HostPort> parse(String endpoints) {
		try {
			return EtcdBootstrapClient.parseEndpoints(endpoints);
		}
		catch (NoClassDefFoundError e) {
			throw new IllegalStateException(MISSING, e);
		}
	}

	/**
	 * @param endpoints etcd endpoints
	 * @param instance the address decode ranks name the instance by
	 * @return a store of the instance's registrations in etcd; it connects on first use
	 */
	public static RouteStore open(List<HostPort> endpoints, HostPort instance) {
		try {
			return new EtcdRouteStore(EtcdBootstrapClient.create(endpoints), instance);
		}
		catch (NoClassDefFoundError e) {
			throw new IllegalStateException(MISSING, e);
		}
	}
}
