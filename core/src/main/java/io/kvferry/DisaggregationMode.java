package io.kvferry;

/** Which side of the disaggregated pair a {@link KVManager} serves. */
public enum DisaggregationMode {
	/** Holds computed KV pages and sends them. */
	PREFILL,
	/** Receives KV pages into pre-allocated pages. */
	DECODE
}
