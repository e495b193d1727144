package io.kvferry.bootstrap.server.internal;

import java.util.List;
import java.util.Map;
import java.util.Objects;

import io.kvferry.HostPort;
import io.kvferry.bootstrap.BootstrapFields;

/**
 * A prefill rank's published endpoint, answered to decode ranks as {@code {"rank_ip": .., "rank_port": ..}}, with
 * {@code "kvferry_incarnation"} after them when the rank registered one and {@code "kvferry_more_endpoints"} when it
 * registered further interfaces (SGLang's decode reads only the first two).
 *
 * @param rankIp the address exactly as the rank sent it
 * @param rankPort 1..65535
 * @param incarnation the rank's incarnation as it registered it, 0 when it sent none
 * @param moreEndpoints the endpoints of the rank's further interfaces, none when it sent none
 */
public record RankEndpoint(String rankIp, int rankPort, long incarnation, List<HostPort> moreEndpoints) {

	public RankEndpoint {
		Objects.requireNonNull(rankIp, "rankIp");
		moreEndpoints = List.copyOf(moreEndpoints);
	}

	/** An endpoint of a rank with one interface. */
	public RankEndpoint(String rankIp, int rankPort, long incarnation) {
		this(rankIp, rankPort, incarnation, List.of());
	}

	/** An endpoint registered without an incarnation. */
	public RankEndpoint(String rankIp, int rankPort) {
		this(rankIp, rankPort, 0);
	}

	/** @return the JSON object decode ranks expect, in SGLang's key order */
	public Map<String, Object> toJson() {
		return BootstrapFields.endpoint(rankIp, rankPort, incarnation, moreEndpoints);
	}

	@Override
	public String toString() {
		return rankIp + ":" + rankPort;
	}
}
