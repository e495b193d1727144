package io.kvferry.bootstrap.server.internal;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

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
		Map<String, Object> json = new LinkedHashMap<>();
		json.put("rank_ip", rankIp);
		json.put("rank_port", rankPort);
		return json;
	}

	@Override
	public String toString() {
		return rankIp + ":" + rankPort;
	}
}
