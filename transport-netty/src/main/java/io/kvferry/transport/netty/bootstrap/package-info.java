/**
 * The reactive bootstrap client: {@link io.kvferry.transport.netty.bootstrap.ReactorBootstrapClient} implements
 * {@link io.kvferry.bootstrap.BootstrapClient} on Reactor Netty's HTTP client, speaking SGLang's bootstrap protocol
 * ({@code PUT /route}, {@code GET /route}, {@code GET /health}).
 */
package io.kvferry.transport.netty.bootstrap;
