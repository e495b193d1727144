package io.kvferry.bootstrap;

import java.util.Objects;

import io.kvferry.ParallelLayout;

/**
 * What a prefill rank publishes with {@code PUT /route}: its parallel layout and the endpoint its KV manager listens on.
 * Field names on the wire are SGLang's ({@code attn_tp_size}, {@code rank_ip}, ...).
 *
 * @param role always {@code Prefill} for ranks that serve KV
 * @param layout the rank's parallel layout
 * @param rankIp the address decode ranks connect to (IPv4/IPv6 literal without brackets, or hostname)
 * @param rankPort the manager's listening port
 * @param pageSize KV page size in tokens
 */
public record PrefillRegistration(String role, ParallelLayout layout, String rankIp, int rankPort, int pageSize) {

	/** SGLang's role string for prefill ranks. */
	public static final String PREFILL = "Prefill";

	public PrefillRegistration {
		Objects.requireNonNull(role, "role");
		Objects.requireNonNull(layout, "layout");
		Objects.requireNonNull(rankIp, "rankIp");
		if (rankPort < 1 || rankPort > 65535) {
			throw new IllegalArgumentException("rankPort : " + rankPort + " (expected: 1..65535)");
		}
		if (pageSize < 1) {
			throw new IllegalArgumentException("pageSize : " + pageSize + " (expected: >= 1)");
		}
	}

	/** @return a {@code Prefill} registration */
	public static PrefillRegistration prefill(ParallelLayout layout, String rankIp, int rankPort, int pageSize) {
		return new PrefillRegistration(PREFILL, layout, rankIp, rankPort, pageSize);
	}
}
