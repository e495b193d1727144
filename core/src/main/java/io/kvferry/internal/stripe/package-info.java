/**
 * Striping: one peer rank reached over several transport connections that the role engines see as one connection
 * (joins, per-stripe tallies and fences, abort answers per stripe, closing as one), and how a room's bytes are dealt
 * over them (pieces, small blocks gathered into scatter blocks, the window per stripe, the bytes that go on stripe 0
 * alone, the most stripes a peer may open). It offers the engines a connection-shaped surface: a
 * {@link io.kvferry.internal.stripe.StripedConnection} or {@link io.kvferry.internal.stripe.DialledConnection} per
 * peer, a {@link io.kvferry.internal.stripe.StripedFlow} per room, and the
 * {@link io.kvferry.internal.stripe.Tally} a landing payload feeds; it uses nothing of the engines. A new stripe
 * policy touches this package, the wire record that carries it and its codec only. Internal use only: nothing here is
 * API and it may change in any release.
 */
package io.kvferry.internal.stripe;
