/**
 * The transport SPI: what the transfer engine in {@code core} needs from a transport (ordered control messages, data
 * blocks sent from registered memory, payloads streamed into a sink). Implemented in memory by
 * {@link io.kvferry.transport.local.InMemoryKVTransport} and over TCP by {@code kvferry-transport-netty}.
 */
package io.kvferry.spi;
