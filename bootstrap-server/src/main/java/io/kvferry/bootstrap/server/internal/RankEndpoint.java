package io.kvferry.bootstrap.server.internal;

import java.util.Map;
import java.util.Objects;

import io.kvferry.bootstrap.BootstrapFields;

/**
 * A prefill rank's published endpoint, answered to decode ranks as {@code {"rank_ip": .., "rank_port": ..}}.
 *
 * @param rankIp the address exactly as the rank sent it
 * @param rankPort 1..65535
 */
public record RankEndpoint(String rankIp, int rankPort) {

	public RankEndpoint {
		Objects.requireNonNull(rankIp, "rankIp");
	}

	/** @return the JSON object decode ranks expect, in SGLang's key order */
	public Map<String, Object> toJson() {
		return BootstrapFields.endpoint(rankIp, rankPort);
	}

	@Override
	public String toString() {
		return rankIp + ":" + rankPort;
	}
}
