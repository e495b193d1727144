/**
 * A kit for tests, examples and benchmarks: model shapes, rank memory laid out as SGLang lays it out, verifiable page
 * patterns and a cluster of prefill and decode managers that runs whole rooms and checks every byte
 * ({@link io.kvferry.test.KVCluster}).
 *
 * <p>For JUnit 5 test suites it also holds the transport TCK ({@link io.kvferry.test.tck.TransportTck}) and the
 * {@link io.kvferry.test.LeakGuard} extension, which fails a test class when Netty reported a leaked buffer; it is
 * registered through {@code META-INF/services} and runs when the build enables JUnit's extension autodetection
 * ({@code junit.jupiter.extensions.autodetection.enabled=true}).
 */
package io.kvferry.test;
