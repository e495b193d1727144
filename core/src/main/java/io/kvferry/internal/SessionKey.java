package io.kvferry.internal;

import io.kvferry.HostPort;

/** One prefill rank of one instance, as decode names it: the key of its session. */
record SessionKey(HostPort bootstrap, int dp, int cp, int tp, int pp) {

	/** A registry names ranks without their CP rank: a change to a rank concerns each of its CP ranks. */
	boolean sameRankAs(SessionKey other) {
		return bootstrap.equals(other.bootstrap) && dp == other.dp && tp == other.tp && pp == other.pp;
	}
}
