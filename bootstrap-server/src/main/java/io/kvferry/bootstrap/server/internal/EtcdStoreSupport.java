package io.kvferry.bootstrap.server.internal;

import java.nio.file.Path;
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
	 * How the server reaches etcd: TLS material and credentials, all optional.
	 *
	 * @param ca PEM file of the CA that signed etcd's certificate, or null for plain http
	 * @param certificate PEM file of the client certificate for mutual TLS, or null
	 * @param key PEM file of its key, or null
	 * @param user the etcd user, or null for no authentication
	 * @param password its password, or null
	 */
	public record Access(Path ca, Path certificate, Path key, String user, String password) {

		/** No TLS, no authentication. */
		public static final Access NONE = new Access(null, null, null, null, null);

		/** @return whether TLS or a user is configured */
		public boolean isSet() {
			return ca != null || user != null;
		}

		/** Never shows the password. */
		@Override
		public String toString() {
			return (ca == null ? "" : "tls=" + (certificate == null ? "CA " + ca : "CA " + ca + ", client certificate "
					+ certificate)) + (ca != null && user != null ? " " : "") + (user == null ? "" : "user=" + user);
		}
	}

	/**
	 * Reads the TLS files and checks the credentials now, so that a bad file fails the configuration, naming it.
	 *
	 * @param access TLS material and credentials
	 * @throws IllegalArgumentException naming the file or value that is wrong
	 */
	public static void check(Access access) {
		client(List.of(new HostPort("127.0.0.1", 2379)), access);
	}

	/**
	 * @param endpoints etcd endpoints
	 * @param instance the address decode ranks name the instance by
	 * @param access TLS material and credentials
	 * @return a store of the instance's registrations in etcd; it connects on first use
	 */
	public static RouteStore open(List<HostPort> endpoints, HostPort instance, Access access) {
		try {
			return new EtcdRouteStore(client(endpoints, access), instance);
		}
		catch (NoClassDefFoundError e) {
			throw new IllegalStateException(MISSING, e);
		}
	}

	private static EtcdBootstrapClient client(List<HostPort> endpoints, Access access) {
		try {
			EtcdBootstrapClient client = EtcdBootstrapClient.create(endpoints);
			if (access.ca() != null) {
				client = access.certificate() == null ? client.tls(access.ca())
						: client.tls(access.ca(), access.certificate(), access.key());
			}
			if (access.user() != null) {
				client = client.credentials(access.user(), access.password());
			}
			return client;
		}
		catch (NoClassDefFoundError e) {
			throw new IllegalStateException(MISSING, e);
		}
	}
}
