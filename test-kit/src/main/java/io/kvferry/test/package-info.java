/**
 * A kit for tests: scenarios that run whole rooms on the harness's cluster ({@link io.kvferry.harness.KVCluster}),
 * test doubles of the bootstrap server and of misbehaving peers, the transport TCK
 * ({@link io.kvferry.test.tck.TransportTck}) and the {@link io.kvferry.test.LeakGuard} extension, which fails a test
 * class when Netty reported a leaked buffer; it is registered through {@code META-INF/services} and runs when the
 * build enables JUnit's extension autodetection ({@code junit.jupiter.extensions.autodetection.enabled=true}).
 */
@NullMarked
package io.kvferry.test;

import org.jspecify.annotations.NullMarked;
