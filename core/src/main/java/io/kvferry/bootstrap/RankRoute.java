package io.kvferry.bootstrap;

import java.util.Objects;

import io.kvferry.HostPort;

/**
 * Where one prefill rank listens, and which process registered it there.
 *
 * @param endpoint the rank's {@code rank_ip:rank_port}
 * @param incarnation the incarnation its registration carried, or {@link PrefillRegistration#UNKNOWN_INCARNATION}
 *        when the registration or the server carried none
 */
public record RankRoute(HostPort endpoint, long incarnation) {

	public RankRoute {
		Objects.requireNonNull(endpoint, "endpoint");
	}

	/** @return a route whose incarnation nobody told */
	public static RankRoute of(HostPort endpoint) {
		return new RankRoute(endpoint, PrefillRegistration.UNKNOWN_INCARNATION);
	}
}
