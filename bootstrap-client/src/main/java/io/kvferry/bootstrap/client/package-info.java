/**
 * The reactive bootstrap client: {@link io.kvferry.bootstrap.client.ReactorBootstrapClient} implements
 * {@link io.kvferry.bootstrap.BootstrapClient} on Reactor Netty's HTTP client, speaking SGLang's bootstrap protocol
 * ({@code PUT /route}, {@code GET /route}, {@code GET /health}).
 */
@NullMarked
package io.kvferry.bootstrap.client;

import org.jspecify.annotations.NullMarked;
