package io.kvferry.bootstrap;

import java.util.List;
import java.util.Objects;

import io.kvferry.HostPort;
import io.kvferry.ParallelLayout;

/**
 * What a prefill rank publishes with {@code PUT /route}: its parallel layout and the endpoint its KV manager listens on.
 * Field names on the wire are SGLang's ({@code attn_tp_size}, {@code rank_ip}, ...); {@link BootstrapFields} names
 * them and encodes a registration.
 *
 * @param role always {@code Prefill} for ranks that serve KV
 * @param layout the rank's parallel layout
 * @param rankIp the address decode ranks connect to (IPv4/IPv6 literal without brackets, or hostname)
 * @param rankPort the manager's listening port
 * @param pageSize KV page size in tokens
 * @param dsaCacheLayerSplit SGLang's {@code enable_dsa_cache_layer_split}: KV layers split across CP ranks
 * @param allCpRanksTransfer every CP rank sends its share of each room (sent as the instance-level field
 *        {@value #ALL_CP_RANKS_FIELD}, which the bootstrap server passes through to its parallel-info answer)
 * @param incarnation the rank's incarnation ({@code KVManager.incarnation()}), sent as
 *        {@value BootstrapFields#INCARNATION} and returned with the rank's endpoint; {@link #UNKNOWN_INCARNATION} sends
 *        none
 * @param moreEndpoints the endpoints of the rank's further network interfaces, sent as
 *        {@value BootstrapFields#MORE_ENDPOINTS} (SGLang reads only {@code rank_ip:rank_port}); at most
 *        {@link BootstrapFields#MAX_ENDPOINTS} - 1, none for a rank of one interface
 */
public record PrefillRegistration(String role, ParallelLayout layout, String rankIp, int rankPort, int pageSize,
		boolean dsaCacheLayerSplit, boolean allCpRanksTransfer, long incarnation, List<HostPort> moreEndpoints) {

	/** An incarnation nobody told: registrations of SGLang's own ranks, and answers of servers that keep none. */
	public static final long UNKNOWN_INCARNATION = 0;

	/** The registration field that says all CP ranks transfer; sent only when true. */
	public static final String ALL_CP_RANKS_FIELD = BootstrapFields.ALL_CP_RANKS_TRANSFER;

	/** SGLang's role string for prefill ranks. */
	public static final String PREFILL = BootstrapFields.PREFILL_ROLE;

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
		moreEndpoints = RankRoute.checkMore(moreEndpoints);
	}

	/** A registration of a rank with one network interface. */
	public PrefillRegistration(String role, ParallelLayout layout, String rankIp, int rankPort, int pageSize,
			boolean dsaCacheLayerSplit, boolean allCpRanksTransfer, long incarnation) {
		this(role, layout, rankIp, rankPort, pageSize, dsaCacheLayerSplit, allCpRanksTransfer, incarnation, List.of());
	}

	/** A registration without an incarnation. */
	public PrefillRegistration(String role, ParallelLayout layout, String rankIp, int rankPort, int pageSize,
			boolean dsaCacheLayerSplit, boolean allCpRanksTransfer) {
		this(role, layout, rankIp, rankPort, pageSize, dsaCacheLayerSplit, allCpRanksTransfer, UNKNOWN_INCARNATION);
	}

	/** A registration without CP transfer options. */
	public PrefillRegistration(String role, ParallelLayout layout, String rankIp, int rankPort, int pageSize) {
		this(role, layout, rankIp, rankPort, pageSize, false, false);
	}

	/** @return a {@code Prefill} registration */
	public static PrefillRegistration prefill(ParallelLayout layout, String rankIp, int rankPort, int pageSize) {
		return new PrefillRegistration(PREFILL, layout, rankIp, rankPort, pageSize);
	}

	/** @return this registration with {@code incarnation} */
	public PrefillRegistration withIncarnation(long incarnation) {
		return new PrefillRegistration(role, layout, rankIp, rankPort, pageSize, dsaCacheLayerSplit,
				allCpRanksTransfer, incarnation, moreEndpoints);
	}

	/** @return this registration with the endpoints of the rank's further network interfaces */
	public PrefillRegistration withMoreEndpoints(List<HostPort> moreEndpoints) {
		return new PrefillRegistration(role, layout, rankIp, rankPort, pageSize, dsaCacheLayerSplit,
				allCpRanksTransfer, incarnation, moreEndpoints);
	}
}
