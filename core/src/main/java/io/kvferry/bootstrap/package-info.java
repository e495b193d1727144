/**
 * The bootstrap protocol as the engine sees it: what prefill ranks register, what decode ranks look up, and the
 * {@link io.kvferry.bootstrap.BootstrapClient} contract that transports implement over HTTP.
 */
@NullMarked
package io.kvferry.bootstrap;

import org.jspecify.annotations.NullMarked;
