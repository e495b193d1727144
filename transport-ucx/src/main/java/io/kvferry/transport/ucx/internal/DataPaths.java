package io.kvferry.transport.ucx.internal;

import java.util.Locale;
import java.util.Set;

import io.kvferry.transport.ucx.UcxDataPath;

/**
 * Chooses a connection's data path from what both sides told in the handshake. RMA over UCX's TCP transport is
 * emulated with active messages and measured slower than active messages themselves (on the build machine: gets at
 * 0.63 GB/s and puts at 0.15 GB/s against 5.5 GB/s for active messages, 4 MiB messages with ucx_perftest), so
 * {@link UcxDataPath#AUTO} reads one-sided only where a transport both sides allow does RMA natively: shared memory
 * between ranks of one host, verbs between hosts that both have an RDMA device.
 */
final class DataPaths {

	/** UCX transports (and aliases) that do RMA natively within one host. */
	private static final Set<String> SHARED_MEMORY = Set.of("posix", "sysv", "xpmem", "knem", "cma", "sm", "shm",
			"mm");
	/** UCX transports (and aliases) that do RMA natively between hosts. */
	private static final Set<String> VERBS = Set.of("rc", "rc_v", "rc_x", "rc_verbs", "rc_mlx5", "dc", "dc_x",
			"dc_mlx5", "ib");

	private DataPaths() {
	}

	/** The data path of one connection and why. */
	record Choice(UcxDataPath path, String why) {
	}

	/**
	 * @param own the listening side's hello
	 * @param peer the connecting side's hello
	 * @param wanted the listening side's own wish
	 */
	static Choice choose(Handshake own, Handshake peer, UcxDataPath wanted) {
		UcxDataPath theirs = peer.dataPath();
		if (wanted == UcxDataPath.ACTIVE_MESSAGES || theirs == UcxDataPath.ACTIVE_MESSAGES) {
			return new Choice(UcxDataPath.ACTIVE_MESSAGES, "active messages asked for");
		}
		if (wanted == UcxDataPath.ONE_SIDED || theirs == UcxDataPath.ONE_SIDED) {
			return new Choice(UcxDataPath.ONE_SIDED, "one-sided reads asked for");
		}
		if (sameHost(own, peer) && allows(own.tls(), SHARED_MEMORY) && allows(peer.tls(), SHARED_MEMORY)) {
			return new Choice(UcxDataPath.ONE_SIDED, "shared memory on one host does RMA natively");
		}
		if (own.rdmaDevice() && peer.rdmaDevice() && allows(own.tls(), VERBS) && allows(peer.tls(), VERBS)) {
			return new Choice(UcxDataPath.ONE_SIDED, "RDMA verbs do RMA natively");
		}
		return new Choice(UcxDataPath.ACTIVE_MESSAGES, "RMA would be emulated on " + describe(own.tls()));
	}

	/**
	 * Whether the endpoint may ask UCX for peer failure handling: UCX 1.13's shared-memory transports do not offer it
	 * (an endpoint that asks gets no shared-memory lane at all), so a pair on one host that allows them goes without it
	 * and learns of a dead peer from its heartbeats.
	 */
	static boolean peerErrorHandling(Handshake own, Handshake peer) {
		return !(sameHost(own, peer) && allows(own.tls(), SHARED_MEMORY) && allows(peer.tls(), SHARED_MEMORY));
	}

	static boolean sameHost(Handshake a, Handshake b) {
		return !a.host().isEmpty() && a.host().equals(b.host());
	}

	/** @return whether a {@code UCX_TLS} value lets UCX use one of {@code family} */
	static boolean allows(String tls, Set<String> family) {
		String t = tls.trim().toLowerCase(Locale.ROOT);
		if (t.isEmpty() || t.equals("all")) {
			return true;
		}
		boolean negated = t.startsWith("^");
		boolean named = false;
		for (String name : (negated ? t.substring(1) : t).split(",")) {
			String n = name.trim();
			if (n.equals("all") || family.contains(n) || family.contains(n.replace("_v", "").replace("_x", ""))) {
				named = true;
			}
		}
		// "^tcp" allows everything but what it lists; one of the family listed there counts as the family refused.
		return negated != named;
	}

	private static String describe(String tls) {
		return tls.isEmpty() ? "UCX's default transports" : tls;
	}
}
