/**
 * The transport SPI: what the transfer engine in {@code core} needs from a transport (ordered control messages, data
 * blocks sent from registered memory, payloads streamed into a sink). Implemented in memory by
 * {@link io.kvferry.transport.local.InMemoryKVTransport} and over TCP by {@code kvferry-transport-netty}; every
 * implementation runs the contract tests of {@code kvferry-test} ({@code io.kvferry.test.tck.TransportTck}).
 * {@link io.kvferry.spi.NativeMemory} gives transports views of registered memory without copying;
 * {@link io.kvferry.spi.LazyResource} holds what a transport or client builds on first use and disposes once.
 */
@NullMarked
package io.kvferry.spi;

import org.jspecify.annotations.NullMarked;
