/**
 * Micrometer metrics of KV managers: {@link io.kvferry.metrics.micrometer.KVManagerMetrics} binds a manager's
 * statistics to a meter registry.
 */
@NullMarked
package io.kvferry.metrics.micrometer;

import org.jspecify.annotations.NullMarked;
