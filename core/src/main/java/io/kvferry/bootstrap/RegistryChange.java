package io.kvferry.bootstrap;

import java.util.Objects;

import io.kvferry.HostPort;

/**
 * Something a registry of prefill instances learnt that makes what a decode rank cached about an instance stale: a
 * rank left (its process died, its lease expired) or came back at another endpoint, or the instance's sizes changed.
 *
 * @param bootstrap the instance, by the bootstrap address decode ranks name it with
 * @param kind what changed
 * @param dpGroup the rank's DP group (-1 for {@link Kind#INSTANCE_CHANGED})
 * @param tpRank the rank's attention TP rank (-1 for {@link Kind#INSTANCE_CHANGED})
 * @param ppRank the rank's PP rank (-1 for {@link Kind#INSTANCE_CHANGED})
 * @param incarnation the incarnation the rank registered with now ({@link Kind#RANK_RESTARTED}, {@link Kind#RANK_MOVED}),
 *        or {@link PrefillRegistration#UNKNOWN_INCARNATION}
 */
public record RegistryChange(HostPort bootstrap, Kind kind, int dpGroup, int tpRank, int ppRank, long incarnation) {

	/** What changed. */
	public enum Kind {
		/** The rank is no longer registered: nothing may be sent to it any more. */
		RANK_REMOVED,
		/** The rank registered another endpoint: connections to the old one are stale. */
		RANK_MOVED,
		/**
		 * The rank registered the same endpoint with another incarnation: its process restarted, and connections to
		 * the old one are stale.
		 */
		RANK_RESTARTED,
		/** The instance's sizes (TP, DP, PP, page size) changed: every plan made from the old ones is stale. */
		INSTANCE_CHANGED
	}

	public RegistryChange {
		Objects.requireNonNull(bootstrap, "bootstrap");
		Objects.requireNonNull(kind, "kind");
	}

	/** A change that names no incarnation. */
	public RegistryChange(HostPort bootstrap, Kind kind, int dpGroup, int tpRank, int ppRank) {
		this(bootstrap, kind, dpGroup, tpRank, ppRank, PrefillRegistration.UNKNOWN_INCARNATION);
	}

	/** @return a change of the whole instance */
	public static RegistryChange instance(HostPort bootstrap) {
		return new RegistryChange(bootstrap, Kind.INSTANCE_CHANGED, -1, -1, -1);
	}
}
