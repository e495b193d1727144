package io.kvferry.registry.etcd;

import java.nio.charset.StandardCharsets;
import java.util.Objects;

import io.etcd.jetcd.ByteSequence;
import io.kvferry.HostPort;
import org.jspecify.annotations.Nullable;

/**
 * The registry's key layout in etcd, under a prefix ({@code kvferry} by default). An instance is named by the
 * bootstrap address its decode ranks use:
 *
 * <pre>
 * {prefix}/instances/{host:port}/info                    instance sizes (JSON); the first registration fixes them
 * {prefix}/instances/{host:port}/ranks/{dp}/{cp}/{tp}/{pp}  a rank's endpoint (JSON), under the rank's lease
 * </pre>
 *
 * Keys are text; IPv6 hosts are bracketed, as {@link HostPort#toString()} writes them.
 *
 * @param prefix the key prefix, without a trailing slash
 */
public record RegistryKeys(String prefix) {

	/** The prefix every kvferry key starts with unless configured otherwise. */
	public static final String DEFAULT_PREFIX = "kvferry";

	private static final String INSTANCES = "/instances/";
	private static final String INFO = "/info";
	private static final String RANKS = "/ranks/";

	public RegistryKeys {
		Objects.requireNonNull(prefix, "prefix");
		if (prefix.isEmpty() || prefix.endsWith("/") || prefix.chars().anyMatch(c -> c <= ' ' || c > '~')) {
			throw new IllegalArgumentException("prefix : '" + prefix
					+ "' (expected: non-empty visible ASCII without a trailing '/')");
		}
	}

	/** @return the key that holds the instance's sizes */
	public String info(HostPort instance) {
		return instance(instance) + INFO;
	}

	/** @return the prefix of every rank key of the instance */
	public String ranks(HostPort instance) {
		return instance(instance) + RANKS;
	}

	/** @return the key of one rank */
	public String rank(HostPort instance, int dpGroup, int cpRank, int tpRank, int ppRank) {
		return ranks(instance) + dpGroup + "/" + cpRank + "/" + tpRank + "/" + ppRank;
	}

	/** @return the prefix of every instance's keys */
	public String instances() {
		return prefix + INSTANCES;
	}

	private String instance(HostPort instance) {
		return instances() + instance;
	}

	/**
	 * Reads a key of this layout back.
	 *
	 * @param key a key seen in etcd
	 * @return what it names, or {@code null} when it is not a registry key of this layout
	 */
	public @Nullable Parsed parse(String key) {
		if (!key.startsWith(instances())) {
			return null;
		}
		String rest = key.substring(instances().length());
		try {
			if (rest.endsWith(INFO) && rest.indexOf('/') == rest.length() - INFO.length()) {
				return new Parsed(HostPort.parse(rest.substring(0, rest.length() - INFO.length())), -1, -1, -1, -1);
			}
			int ranks = rest.indexOf(RANKS);
			if (ranks < 0) {
				return null;
			}
			String[] place = rest.substring(ranks + RANKS.length()).split("/", -1);
			if (place.length != 4) {
				return null;
			}
			return new Parsed(HostPort.parse(rest.substring(0, ranks)), Integer.parseInt(place[0]),
					Integer.parseInt(place[1]), Integer.parseInt(place[2]), Integer.parseInt(place[3]));
		}
		catch (IllegalArgumentException e) {
			return null;
		}
	}

	/**
	 * A registry key read back.
	 *
	 * @param instance the instance's bootstrap address
	 * @param dpGroup the rank's DP group, -1 for the instance's info key
	 * @param cpRank the rank's attention CP rank, -1 for the info key
	 * @param tpRank the rank's attention TP rank, -1 for the info key
	 * @param ppRank the rank's PP rank, -1 for the info key
	 */
	public record Parsed(HostPort instance, int dpGroup, int cpRank, int tpRank, int ppRank) {

		/** @return whether the key holds the instance's sizes (else it is a rank's endpoint) */
		public boolean isInfo() {
			return dpGroup < 0;
		}
	}

	static ByteSequence bytes(String text) {
		return ByteSequence.from(text, StandardCharsets.UTF_8);
	}
}
