/**
 * The in-memory transport: {@link io.kvferry.transport.local.InMemoryKVTransport} connects managers of one JVM without
 * sockets. It is public API for single-process setups and for tests (with a virtual-time scheduler), and it lives in
 * core because core's own engine tests run over it.
 */
@NullMarked
package io.kvferry.transport.local;

import org.jspecify.annotations.NullMarked;
