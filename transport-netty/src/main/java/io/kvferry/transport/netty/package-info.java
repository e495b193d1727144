/**
 * The Netty TCP implementation of kvferry's transport SPI: {@link io.kvferry.transport.netty.NettyKVTransport}.
 * The bootstrap HTTP client lives in {@code io.kvferry.bootstrap.client}.
 */
@NullMarked
package io.kvferry.transport.netty;

import org.jspecify.annotations.NullMarked;
