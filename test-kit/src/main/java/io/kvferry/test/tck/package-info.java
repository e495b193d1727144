/**
 * The transport TCK: {@link io.kvferry.test.tck.TransportTck} holds, as tests, the contract every
 * {@link io.kvferry.spi.KVTransport} keeps, and {@link io.kvferry.test.tck.HandshakeTransportTck} adds what a transport
 * whose handshake can refuse a peer keeps. A transport's test class extends one of them.
 */
@NullMarked
package io.kvferry.test.tck;

import org.jspecify.annotations.NullMarked;
