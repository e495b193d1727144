package io.kvferry.internal;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import io.kvferry.HostPort;
import io.kvferry.bootstrap.PrefillParallelInfo;
import io.kvferry.internal.topology.RankMapping;
import reactor.core.publisher.Mono;

/**
 * What resolving each prefill instance found, per DP group, reused by later rooms while it is exactly what resolving
 * again would give: the instance's cached sizes are still the ones it was planned with, and every session is still
 * open, i.e. the one cached for its rank. A forgotten instance or a closed session takes the full path, which fetches
 * and connects anew; a session whose connection is closing or that drains is still the cached one, and the room fails
 * for it either way.
 */
final class DecodeRoutes {

	/** A room's prefill ranks: the plan, and one session per target in the plan's order. */
	record Resolved(RankMapping mapping, List<DecodeSession> sessions) {
	}

	private record Route(Mono<PrefillParallelInfo> instance, PrefillParallelInfo info,
			ConcurrentHashMap<Integer, Resolved> byDp) {
	}

	private final ConcurrentHashMap<HostPort, Route> byInstance = new ConcurrentHashMap<>();
	private final Map<HostPort, Mono<PrefillParallelInfo>> instances;
	private final Map<SessionKey, Mono<DecodeSession>> sessions;
	private final Set<DecodeSession> open;

	/**
	 * @param instances the manager's cached parallel info per instance
	 * @param sessions the manager's session per rank
	 * @param open the sessions whose connection has not closed yet
	 */
	DecodeRoutes(Map<HostPort, Mono<PrefillParallelInfo>> instances, Map<SessionKey, Mono<DecodeSession>> sessions,
			Set<DecodeSession> open) {
		this.instances = instances;
		this.sessions = sessions;
		this.open = open;
	}

	/** @return the resolution a room of this instance may reuse, or null when it must resolve */
	Resolved current(HostPort bootstrap, long room, Integer dpHint) {
		Route route = byInstance.get(bootstrap);
		if (route == null || instances.get(bootstrap) != route.instance) {
			return null;
		}
		if (dpHint != null && (dpHint < 0 || dpHint >= route.info.dpSize())) {
			// Resolving names the rule this hint breaks.
			return null;
		}
		Resolved resolved = route.byDp.get(RankMapping.prefillDpRank(room, dpHint, route.info.dpSize()));
		if (resolved == null) {
			return null;
		}
		for (DecodeSession s : resolved.sessions) {
			// A session leaves the session table when its connection starts closing and the open set once it closed:
			// either way it is no longer the one to ask, and resolving again connects anew.
			if (!open.contains(s) || sessions.get(s.key) != s.entry) {
				return null;
			}
		}
		return resolved;
	}

	void remember(HostPort bootstrap, Mono<PrefillParallelInfo> instance, PrefillParallelInfo info, int dp,
			Resolved resolved) {
		Route route = byInstance.compute(bootstrap, (b, old) -> old != null && old.instance == instance ? old
				: new Route(instance, info, new ConcurrentHashMap<>()));
		route.byDp.put(dp, resolved);
	}

	void forget(HostPort bootstrap) {
		byInstance.remove(bootstrap);
	}
}
