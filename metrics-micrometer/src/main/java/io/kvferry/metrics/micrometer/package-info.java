/** Micrometer metrics of KV managers (optional: needs micrometer-core on the class path). */
package io.kvferry.metrics.micrometer;
