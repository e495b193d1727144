package io.kvferry.bootstrap.server.internal;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

import com.fasterxml.jackson.databind.JsonNode;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Mono;
import reactor.netty.http.server.HttpServerResponse;

/**
 * {@code POST /register_dp_rank} and {@code POST /query_dp_ranks}: which prefill DP rank serves a room, written by
 * the prefill side and read in batches by routers ({@link RoomDpRankTable}).
 * <p>
 * A registration that finds the table full is answered 503 naming the cap: the table is shared by all clients and
 * frees itself as entries expire, a condition of the server rather than of one client's rate (which 429 would say).
 * Refusals are counted in the metrics and logged at most once per {@link #REFUSAL_WARNING_INTERVAL}. Thread-safe;
 * never blocks.
 */
final class DpRankRequests {

	private static final Logger log = LoggerFactory.getLogger(DpRankRequests.class);

	/** Shortest time between two warnings about a full room table. */
	static final Duration REFUSAL_WARNING_INTERVAL = Duration.ofSeconds(10);

	private final RoomDpRankTable rooms;
	private final ServerMetrics metrics;
	private final Throttle refusalWarnings = new Throttle(REFUSAL_WARNING_INTERVAL, System::nanoTime);

	/**
	 * @param rooms the room → DP rank table
	 * @param metrics where registrations, refusals and look-ups are counted
	 */
	DpRankRequests(RoomDpRankTable rooms, ServerMetrics metrics) {
		this.rooms = Objects.requireNonNull(rooms, "rooms");
		this.metrics = Objects.requireNonNull(metrics, "metrics");
	}

	/** {@code POST /register_dp_rank}: stores {@code bootstrap_room → dp_rank}; 200 {@code OK}, 503 when full. */
	Mono<Void> register(HttpServerResponse response, byte[] body) {
		JsonNode object = Json.readObject(body);
		long room = Json.requiredNonNegativeLong(object, "bootstrap_room");
		int dpRank = Json.requiredInt(object, "dp_rank");
		if (dpRank < 0) {
			throw RequestException.badRequest("dp_rank : " + dpRank + " (expected: >= 0)");
		}
		boolean stored = rooms.put(room, dpRank);
		metrics.dpRankRegistration(stored);
		if (!stored) {
			if (refusalWarnings.tryPass()) {
				log.warn("Room to DP rank table full ({} entries, maxDpRankEntries {}): refusing new rooms with 503; "
						+ "{} refused so far", rooms.size(), rooms.maxEntries(), rooms.refusedCount());
			}
			throw RequestException.unavailable(tableFull(room));
		}
		log.debug("Room {} served by prefill DP rank {}", room, dpRank);
		return HttpAnswers.text(response, 200, "OK");
	}

	/** {@code POST /query_dp_ranks}: the DP rank of each of {@code bootstrap_rooms} that is known, by room. */
	Mono<Void> query(HttpServerResponse response, byte[] body) {
		JsonNode list = Json.readObject(body).get("bootstrap_rooms");
		if (list == null || list.isNull()) {
			throw RequestException.badRequest("bootstrap_rooms : missing (expected: a list of integers)");
		}
		if (!list.isArray()) {
			throw RequestException.badRequest("bootstrap_rooms : " + Json.shown(list)
					+ " (expected: a list of integers)");
		}
		Map<String, Object> known = new LinkedHashMap<>();
		int found = 0;
		for (int i = 0; i < list.size(); i++) {
			long room = Json.nonNegativeLong("bootstrap_rooms[" + i + "]", list.get(i));
			Integer dpRank = rooms.get(room);
			if (dpRank != null) {
				known.put(Long.toString(room), dpRank);
				found++;
			}
		}
		metrics.dpRankLookups(list.size(), found);
		return HttpAnswers.json(response, known);
	}

	private String tableFull(long room) {
		return "Room to DP rank table full: bootstrap_room " + room + " not stored, " + rooms.maxEntries()
				+ " rooms held (the cap; entries expire " + rooms.lifetime().toSeconds()
				+ " s after they are written). Raise it with --max-dp-rank-entries (BootstrapServer.maxDpRankEntries).";
	}
}
