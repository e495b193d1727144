/**
 * An SGLang-compatible bootstrap HTTP server: prefill ranks publish their endpoints with {@code PUT /route}, decode
 * ranks resolve them with {@code GET /route}. Embed it with {@link io.kvferry.bootstrap.server.BootstrapServer} or run
 * it standalone with {@link io.kvferry.bootstrap.server.BootstrapServerMain}; both can add TLS, a bearer token for
 * writes and Micrometer metrics with a Prometheus {@code GET /metrics}. To serve the protocol on an engine's own
 * Reactor Netty server instead, mount {@link io.kvferry.bootstrap.server.BootstrapRoutes} beside its routes.
 */
@NullMarked
package io.kvferry.bootstrap.server;

import org.jspecify.annotations.NullMarked;
