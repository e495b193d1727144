package io.kvferry.bootstrap;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

import io.kvferry.HostPort;

/**
 * Where one prefill rank listens, and which process registered it there.
 *
 * @param endpoint the rank's {@code rank_ip:rank_port}: the endpoint SGLang's decode dials, and a session's first
 *        stripe
 * @param incarnation the incarnation its registration carried, or {@link PrefillRegistration#UNKNOWN_INCARNATION}
 *        when the registration or the server carried none
 * @param moreEndpoints the endpoints of the rank's further network interfaces
 *        ({@value BootstrapFields#MORE_ENDPOINTS}), at most {@link BootstrapFields#MAX_ENDPOINTS} - 1; none when it
 *        registered one
 */
public record RankRoute(HostPort endpoint, long incarnation, List<HostPort> moreEndpoints) {

	public RankRoute {
		Objects.requireNonNull(endpoint, "endpoint");
		moreEndpoints = checkMore(moreEndpoints);
	}

	/** A route of a rank with one network interface. */
	public RankRoute(HostPort endpoint, long incarnation) {
		this(endpoint, incarnation, List.of());
	}

	/** @return a route whose incarnation nobody told */
	public static RankRoute of(HostPort endpoint) {
		return new RankRoute(endpoint, PrefillRegistration.UNKNOWN_INCARNATION);
	}

	/** @return every endpoint of the rank, {@link #endpoint} first: where decode deals a session's stripes */
	public List<HostPort> endpoints() {
		List<HostPort> all = new ArrayList<>(1 + moreEndpoints.size());
		all.add(endpoint);
		all.addAll(moreEndpoints);
		return List.copyOf(all);
	}

	/** @return an unmodifiable copy of a rank's further endpoints, checked against the bound */
	static List<HostPort> checkMore(List<HostPort> more) {
		Objects.requireNonNull(more, "moreEndpoints");
		if (more.size() > BootstrapFields.MAX_ENDPOINTS - 1) {
			throw new IllegalArgumentException("moreEndpoints : " + more.size() + " (expected: at most "
					+ (BootstrapFields.MAX_ENDPOINTS - 1) + ")");
		}
		return List.copyOf(more);
	}
}
