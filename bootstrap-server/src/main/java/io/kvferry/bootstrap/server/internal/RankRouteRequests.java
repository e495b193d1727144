package io.kvferry.bootstrap.server.internal;

import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;

import io.kvferry.bootstrap.BootstrapException;
import reactor.core.publisher.Mono;
import reactor.netty.http.server.HttpServerResponse;

/**
 * {@code PUT /route} and {@code GET /route}: a prefill rank registers its endpoint ({@link Registration}), decode ranks
 * ask for the instance's sizes (all query parameters −1) or for one rank's endpoint, in SGLang's older protocol
 * ({@code engine_rank}, {@code target_dp_group}, {@code target_pp_rank}) or today's ({@code prefill_dp_rank},
 * {@code prefill_cp_rank}, {@code target_tp_rank}, {@code target_pp_rank}). Sizes are answered 503 until every rank
 * registered, an unknown rank 404; a shared store that cannot be reached 503 naming its failure. Answers are written
 * once per value ({@link AnswerCache}). Thread-safe; never blocks.
 */
final class RankRouteRequests {

	private static final String[] LEGACY_PARAMS = { "engine_rank", "target_dp_group", "target_pp_rank" };
	private static final String[] CURRENT_PARAMS = { "prefill_dp_rank", "prefill_cp_rank", "target_tp_rank",
			"target_pp_rank" };

	private final RouteStore routes;
	private final ServerMetrics metrics;
	private final AnswerCache<RankEndpoint> endpointAnswers = new AnswerCache<>(RankEndpoint::toJson);
	private final AnswerCache<PrefillTopology> parallelInfoAnswers = new AnswerCache<>(PrefillTopology::toJson);
	private final AnswerCache<PrefillTopology> legacyParallelInfoAnswers =
			new AnswerCache<>(PrefillTopology::toLegacyJson);

	/**
	 * @param routes the rank table (in memory, or shared in etcd)
	 * @param metrics where registrations and look-ups are counted
	 */
	RankRouteRequests(RouteStore routes, ServerMetrics metrics) {
		this.routes = Objects.requireNonNull(routes, "routes");
		this.metrics = Objects.requireNonNull(metrics, "metrics");
	}

	/** {@code PUT /route}: stores the registration in {@code body}; 200 {@code OK}. */
	Mono<Void> register(HttpServerResponse response, byte[] body) {
		Registration registration = Registration.parse(Json.readObject(body));
		return unavailableAsRegistryDown(routes.store(registration))
				.flatMap(outcome -> {
					metrics.registration(outcome);
					return HttpAnswers.text(response, 200, "OK");
				});
	}

	/** {@code GET /route}: the instance's sizes, or one rank's endpoint, as {@code params} ask. */
	Mono<Void> get(HttpServerResponse response, Map<String, List<String>> params) {
		boolean current = params.containsKey("prefill_dp_rank") || params.containsKey("prefill_cp_rank")
				|| params.containsKey("target_tp_rank");
		String[] names = current ? CURRENT_PARAMS : LEGACY_PARAMS;
		int[] values = new int[names.length];
		for (int i = 0; i < names.length; i++) {
			values[i] = queryInt(params, names[i]);
		}
		if (Arrays.stream(values).allMatch(v -> v == -1)) {
			return unavailableAsRegistryDown(routes.read(null)).flatMap(instance -> {
				if (!instance.isReady()) {
					metrics.lookup(ServerMetrics.PARALLEL_INFO, ServerMetrics.NOT_READY);
					return Mono.error(RequestException.notReady(instance.registered()));
				}
				metrics.lookup(ServerMetrics.PARALLEL_INFO, ServerMetrics.FOUND);
				PrefillTopology topology = instance.topology();
				return HttpAnswers.send(response, 200, HttpAnswers.JSON, current ? parallelInfoAnswers.body(topology)
						: legacyParallelInfoAnswers.body(topology));
			});
		}
		for (int i = 0; i < names.length; i++) {
			if (values[i] == -1) {
				throw RequestException.badRequest(names[i] + " : -1 (expected: a rank >= 0 unless all of "
						+ String.join(", ", names) + " are -1)");
			}
		}
		RankKey key;
		String notFound;
		if (current) {
			key = new RankKey(values[0], values[1], values[2], values[3]);
			notFound = "dp_rank=" + values[0] + " cp_rank=" + values[1] + " tp_rank=" + values[2] + " pp_rank="
					+ values[3];
		}
		else {
			key = new RankKey(values[1], 0, values[0], values[2]);
			notFound = "dp_group=" + values[1] + " tp_rank=" + values[0] + " pp_rank=" + values[2];
		}
		return unavailableAsRegistryDown(routes.read(key)).flatMap(instance -> {
			// Today's SGLang gates lookups on readiness too, so a decode never caches half an instance.
			if (current && !instance.isReady()) {
				metrics.lookup(ServerMetrics.RANK, ServerMetrics.NOT_READY);
				return Mono.error(RequestException.notReady(instance.registered()));
			}
			RankEndpoint endpoint = instance.endpoint();
			if (endpoint == null) {
				metrics.lookup(ServerMetrics.RANK, ServerMetrics.NOT_FOUND);
				return Mono.error(RequestException.notFound("Bootstrap info not found for " + notFound));
			}
			metrics.lookup(ServerMetrics.RANK, ServerMetrics.FOUND);
			return HttpAnswers.send(response, 200, HttpAnswers.JSON, endpointAnswers.body(endpoint));
		});
	}

	/** A shared store that cannot be reached answers 503, naming the store's failure; clients try again later. */
	private static <T> Mono<T> unavailableAsRegistryDown(Mono<T> call) {
		return call.onErrorMap(BootstrapException.class, e -> RequestException.unavailable("registry unavailable: "
				+ e.getMessage()));
	}

	private static int queryInt(Map<String, List<String>> params, String name) {
		List<String> values = params.get(name);
		if (values == null || values.isEmpty()) {
			throw RequestException.badRequest(name + " : missing (expected: an integer query parameter)");
		}
		String text = values.get(0);
		if (text.isEmpty()) {
			throw RequestException.badRequest(name + " : empty (expected: an integer query parameter)");
		}
		int value;
		try {
			value = Integer.parseInt(text);
		}
		catch (NumberFormatException e) {
			throw RequestException.badRequest(name + " : '" + (text.length() <= 40 ? text : text.substring(0, 40)
					+ "...") + "' (expected: an integer query parameter)");
		}
		if (value < -1) {
			throw RequestException.badRequest(name + " : " + value + " (expected: -1 or a rank >= 0)");
		}
		return value;
	}
}
