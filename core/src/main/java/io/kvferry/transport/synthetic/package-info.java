/**
 * A synthetic prefill instance for decode capacity benchmarks: {@link io.kvferry.transport.synthetic.SyntheticPrefill}
 * gives a decode manager a transport and a bootstrap client that answer as a prefill instance would, in-process,
 * filling every room's bytes with a deterministic pattern at a configurable rate. Decode's own manager, sessions,
 * ledger and states run unchanged, as against a real prefill instance; nothing but decode's work and the pattern's
 * costs the time.
 */
@NullMarked
package io.kvferry.transport.synthetic;

import org.jspecify.annotations.NullMarked;
