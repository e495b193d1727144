/**
 * The control frames of the wire protocol, one codec per message type: {@link
 * io.kvferry.transport.netty.internal.frame.ControlFrames} is the table, keyed by the type byte, that says how each
 * {@link io.kvferry.spi.KVMessage} goes on the wire and comes back. A new message is a new {@code ControlCodec} and
 * one line in that table. Internal use only.
 */
package io.kvferry.transport.netty.internal.frame;
