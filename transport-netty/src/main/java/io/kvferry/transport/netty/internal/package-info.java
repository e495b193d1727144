/**
 * Implementation of the Netty transport: wire codec, frame decoder, connection and listener. Internal use only:
 * nothing here is API and it may change in any release.
 */
package io.kvferry.transport.netty.internal;
