package io.kvferry.bootstrap.server.internal;

import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.netty.handler.codec.http.HttpMethod;
import reactor.core.Disposable;
import reactor.core.Disposables;

/**
 * What one bound bootstrap server counts, in a Micrometer {@link MeterRegistry}, or nothing at all
 * ({@link #none()}).
 * <ul>
 * <li>{@value #REQUESTS} {route, method, status}: answered requests. Unknown paths count as route {@code other},
 * unknown methods as method {@code other} (so junk traffic cannot blow up the series count), requests whose connection
 * closed before an answer went out as status {@code closed}. Requests that Reactor Netty refuses before they reach the
 * routes (malformed request line or headers: 400, 414, 431; request timeout: 408) are not counted.</li>
 * <li>{@value #REGISTRATIONS} {outcome = added, replaced, ignored}: accepted {@code PUT /route}s.</li>
 * <li>{@value #LOOKUPS} {type = parallel_info, rank; outcome = found, not_found, not_ready}: {@code GET /route}s.</li>
 * <li>{@value #DP_RANK_REGISTRATIONS}: accepted {@code POST /register_dp_rank}s; {@value #DP_RANK_REFUSALS}: those
 * refused (503) because the room table was full; {@value #DP_RANK_LOOKUPS} {outcome = found, not_found}: rooms asked by
 * {@code POST /query_dp_ranks}.</li>
 * <li>Gauges {@value #REGISTERED_RANKS} (distinct prefill ranks registered), {@value #EXPECTED_RANKS}
 * (dp × cp × tp × pp of the instance, 0 before its first registration) and {@value #DP_RANK_ENTRIES} (room entries
 * held).</li>
 * <li>Connections ({@link ConnectionLimit}): gauges {@value #OPEN_CONNECTIONS} (counted against the cap) and
 * {@value #LINGERING_REFUSALS} (refused, still open to deliver their 503); counter {@value #REFUSED_CONNECTIONS}
 * {answer = 503, none}: connections over the cap, answered or closed at once.</li>
 * </ul>
 * Prometheus names replace dots with underscores and add {@code _total} to counters
 * ({@code kvferry_bootstrap_requests_total}).
 * <p>
 * Thread-safe and non-blocking: counters are looked up in a concurrent map and incremented; gauges read lock-free
 * tables. The gauges of a bound server, and the connection counters, are removed from the registry when it closes
 * (they hold its tables and its connection limit); other counters stay, so a server bound again on the same registry
 * keeps counting up. Give each live server its own registry: gauges of two live servers on one registry would share
 * one series.
 */
public final class ServerMetrics {

	/** Counter of answered requests. */
	public static final String REQUESTS = "kvferry.bootstrap.requests";
	/** Counter of accepted rank registrations. */
	public static final String REGISTRATIONS = "kvferry.bootstrap.registrations";
	/** Counter of route look-ups. */
	public static final String LOOKUPS = "kvferry.bootstrap.lookups";
	/** Counter of accepted room → DP rank registrations. */
	public static final String DP_RANK_REGISTRATIONS = "kvferry.bootstrap.dp.rank.registrations";
	/** Counter of room → DP rank registrations refused because the table was full. */
	public static final String DP_RANK_REFUSALS = "kvferry.bootstrap.dp.rank.refusals";
	/** Counter of rooms looked up in the room → DP rank table. */
	public static final String DP_RANK_LOOKUPS = "kvferry.bootstrap.dp.rank.lookups";
	/** Gauge of distinct prefill ranks registered. */
	public static final String REGISTERED_RANKS = "kvferry.bootstrap.registered.ranks";
	/** Gauge of the ranks the instance has (0 before its first registration). */
	public static final String EXPECTED_RANKS = "kvferry.bootstrap.expected.ranks";
	/** Gauge of room → DP rank entries held. */
	public static final String DP_RANK_ENTRIES = "kvferry.bootstrap.dp.rank.entries";

	/** Gauge of connections counted against the cap. */
	public static final String OPEN_CONNECTIONS = "kvferry.bootstrap.connections.open";
	/** Gauge of refused connections still open to deliver their 503. */
	public static final String LINGERING_REFUSALS = "kvferry.bootstrap.connections.lingering.refusals";
	/** Counter of connections refused over the cap. */
	public static final String REFUSED_CONNECTIONS = "kvferry.bootstrap.connections.refused";

	/** Lookup type tag value: the instance's sizes. */
	public static final String PARALLEL_INFO = "parallel_info";
	/** Lookup type tag value: one rank's endpoint. */
	public static final String RANK = "rank";
	/** Lookup outcome tag value. */
	public static final String FOUND = "found";
	/** Lookup outcome tag value. */
	public static final String NOT_FOUND = "not_found";
	/** Lookup outcome tag value. */
	public static final String NOT_READY = "not_ready";

	/** Route tag value for paths the server does not serve. */
	public static final String OTHER = "other";
	/** Status tag value when the connection closed before an answer went out. */
	public static final String CLOSED = "closed";

	private static final List<String> ROUTE_LIST = List.of("/route", "/health", "/register_dp_rank",
			"/query_dp_ranks", "/metrics");
	private static final List<HttpMethod> METHOD_LIST = List.of(HttpMethod.GET, HttpMethod.HEAD, HttpMethod.PUT,
			HttpMethod.POST, HttpMethod.DELETE, HttpMethod.PATCH, HttpMethod.OPTIONS, HttpMethod.TRACE,
			HttpMethod.CONNECT);

	private static final String REFUSED_DESCRIPTION = "Connections refused over maxConnections: answered 503, or "
			+ "closed at once when maxLingeringRefusals were already being answered";

	private static final ServerMetrics NONE = new ServerMetrics(null, null);

	private final MeterRegistry registry;
	private final PrometheusMeterRegistry prometheus;
	private final Map<String, Counter> counters = new ConcurrentHashMap<>();
	// The counters of every request and look-up, found without building their tags' key each time.
	private final Map<Integer, Counter> requestCounters = new ConcurrentHashMap<>();
	private final Map<String, Map<String, Counter>> lookupCounters = new ConcurrentHashMap<>();

	private ServerMetrics(MeterRegistry registry, PrometheusMeterRegistry prometheus) {
		this.registry = registry;
		this.prometheus = prometheus;
	}

	/** @return metrics that record nothing and cannot be scraped */
	public static ServerMetrics none() {
		return NONE;
	}

	/**
	 * @param registry where to record; when it is a {@link PrometheusMeterRegistry}, or a composite holding one,
	 *        {@link #scrape()} serves it
	 * @return metrics recording into the registry
	 */
	public static ServerMetrics of(MeterRegistry registry) {
		Objects.requireNonNull(registry, "registry");
		return new ServerMetrics(registry, findPrometheus(registry));
	}

	/**
	 * Registers the gauges of one set of started routes.
	 *
	 * @param routes their rank table
	 * @param rooms their room table
	 * @return removes those meters from the registry when disposed
	 */
	public Disposable registerGauges(RouteStore routes, RoomDpRankTable rooms) {
		Objects.requireNonNull(routes, "routes");
		Objects.requireNonNull(rooms, "rooms");
		if (registry == null) {
			return Disposables.disposed();
		}
		return removing(List.of(
				Gauge.builder(REGISTERED_RANKS, routes, RouteStore::registeredCount)
						.description("Distinct prefill ranks registered with PUT /route")
						.register(registry),
				Gauge.builder(EXPECTED_RANKS, routes, ServerMetrics::expectedRanks)
						.description("Ranks of the prefill instance (dp x cp x tp x pp), 0 before its first "
								+ "registration")
						.register(registry),
				Gauge.builder(DP_RANK_ENTRIES, rooms, RoomDpRankTable::size)
						.description("Room to DP rank entries held, expired ones not yet swept included")
						.register(registry)));
	}

	/**
	 * Registers the gauges and counters that read one bound server's connection limit.
	 *
	 * @param connections the server's connection limit
	 * @return removes those meters from the registry when disposed
	 */
	public Disposable registerConnectionGauges(ConnectionLimit connections) {
		Objects.requireNonNull(connections, "connections");
		if (registry == null) {
			return Disposables.disposed();
		}
		return removing(List.of(
				Gauge.builder(OPEN_CONNECTIONS, connections, ConnectionLimit::openConnections)
						.description("Connections open and counted against maxConnections")
						.register(registry),
				Gauge.builder(LINGERING_REFUSALS, connections, ConnectionLimit::lingeringRefusals)
						.description("Connections refused over maxConnections, still open to deliver their 503")
						.register(registry),
				FunctionCounter.builder(REFUSED_CONNECTIONS, connections, ConnectionLimit::answeredRefusals)
						.description(REFUSED_DESCRIPTION)
						.tag("answer", "503")
						.register(registry),
				FunctionCounter.builder(REFUSED_CONNECTIONS, connections, ConnectionLimit::closedWithoutAnswer)
						.description(REFUSED_DESCRIPTION)
						.tag("answer", "none")
						.register(registry)));
	}

	private Disposable removing(List<Meter> meters) {
		MeterRegistry from = Objects.requireNonNull(registry, "registry");
		return Disposables.composite(meters.stream()
				.map(meter -> (Disposable) () -> from.remove(meter))
				.toList());
	}

	/** @return whether {@link #scrape()} can answer */
	public boolean canScrape() {
		return prometheus != null;
	}

	/**
	 * Writes every meter of the registry in Prometheus' text format. May take the registry's locks: call it off the
	 * event loop.
	 *
	 * @return the scrape text
	 * @throws IllegalStateException when the registry is not a Prometheus one
	 */
	public String scrape() {
		if (prometheus == null) {
			throw new IllegalStateException("no Prometheus registry to scrape");
		}
		return prometheus.scrape();
	}

	/**
	 * Counts an answered request.
	 *
	 * @param path the request path
	 * @param method the request method
	 * @param status the answer's status, or {@code -1} when the connection closed before an answer went out
	 */
	public void request(String path, HttpMethod method, int status) {
		if (registry == null) {
			return;
		}
		int routeIndex = ROUTE_LIST.indexOf(path);
		int methodIndex = METHOD_LIST.indexOf(method);
		// Statuses are three digits (Netty refuses others), -1 for a closed connection.
		int tags = (routeIndex + 1) * (METHOD_LIST.size() + 1) + methodIndex + 1;
		int key = tags * 1000 + (status < 0 ? 0 : status % 1000);
		Counter counter = requestCounters.get(key);
		if (counter == null) {
			String route = routeIndex < 0 ? OTHER : path;
			String methodTag = methodIndex < 0 ? OTHER : method.name();
			String statusTag = status < 0 ? CLOSED : Integer.toString(status);
			counter = requestCounters.computeIfAbsent(key, k -> counter(REQUESTS, "Requests answered, by route, "
					+ "method and status", "route", route, "method", methodTag, "status", statusTag));
		}
		counter.increment();
	}

	/**
	 * Counts an accepted rank registration.
	 *
	 * @param outcome what it did to the table
	 */
	public void registration(RouteTable.Outcome outcome) {
		if (registry == null) {
			return;
		}
		counter(REGISTRATIONS, "Accepted PUT /route registrations, by outcome", "outcome",
				outcome.name().toLowerCase(Locale.ROOT)).increment();
	}

	/**
	 * Counts a {@code GET /route} look-up.
	 *
	 * @param type {@link #PARALLEL_INFO} or {@link #RANK}
	 * @param outcome {@link #FOUND}, {@link #NOT_FOUND} or {@link #NOT_READY}
	 */
	public void lookup(String type, String outcome) {
		if (registry == null) {
			return;
		}
		Map<String, Counter> ofType = lookupCounters.get(type);
		if (ofType == null) {
			ofType = lookupCounters.computeIfAbsent(type, t -> new ConcurrentHashMap<>());
		}
		Counter counter = ofType.get(outcome);
		if (counter == null) {
			counter = ofType.computeIfAbsent(outcome, o -> counter(LOOKUPS, "GET /route look-ups, by type and outcome",
					"type", type, "outcome", o));
		}
		counter.increment();
	}

	/**
	 * Counts a {@code POST /register_dp_rank} that passed validation.
	 *
	 * @param stored whether the room's entry was stored; {@code false} when the full table refused it (503)
	 */
	public void dpRankRegistration(boolean stored) {
		if (registry == null) {
			return;
		}
		(stored ? counter(DP_RANK_REGISTRATIONS, "Accepted POST /register_dp_rank requests")
				: counter(DP_RANK_REFUSALS, "POST /register_dp_rank requests refused (503) because the room table "
						+ "was full")).increment();
	}

	/**
	 * Counts the rooms of one {@code POST /query_dp_ranks}.
	 *
	 * @param asked rooms asked
	 * @param found rooms that had a live entry
	 */
	public void dpRankLookups(int asked, int found) {
		if (registry == null) {
			return;
		}
		String description = "Rooms looked up with POST /query_dp_ranks, by outcome";
		counter(DP_RANK_LOOKUPS, description, "outcome", FOUND).increment(found);
		counter(DP_RANK_LOOKUPS, description, "outcome", NOT_FOUND).increment((double) asked - found);
	}

	private Counter counter(String name, String description, String... tags) {
		String key = tags.length == 0 ? name : name + '|' + String.join("|", tags);
		Counter counter = counters.get(key);
		if (counter == null) {
			// Registering is idempotent in Micrometer; the map only spares the registry's lookup on every request.
			counter = counters.computeIfAbsent(key, k -> Counter.builder(name)
					.description(description)
					.tags(tags)
					.register(registry));
		}
		return counter;
	}

	private static double expectedRanks(RouteStore routes) {
		PrefillTopology topology = routes.topology();
		return topology == null ? 0 : topology.totalRanks();
	}

	private static PrometheusMeterRegistry findPrometheus(MeterRegistry registry) {
		if (registry instanceof PrometheusMeterRegistry prometheus) {
			return prometheus;
		}
		if (registry instanceof CompositeMeterRegistry composite) {
			for (MeterRegistry member : composite.getRegistries()) {
				PrometheusMeterRegistry found = findPrometheus(member);
				if (found != null) {
					return found;
				}
			}
		}
		return null;
	}

	@Override
	public String toString() {
		return registry == null ? "ServerMetrics{none}" : "ServerMetrics{" + registry.getClass().getSimpleName()
				+ (prometheus != null ? ", scrapeable" : "") + "}";
	}
}
