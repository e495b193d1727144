/**
 * A fleet registry on etcd: {@link io.kvferry.registry.etcd.EtcdBootstrapClient} is a
 * {@link io.kvferry.bootstrap.BootstrapClient} whose prefill ranks register under leased keys (gone within one lease
 * TTL after the process dies) and whose decode ranks resolve instances from etcd and are told at once, from a watch,
 * when a rank leaves or moves or an instance changes shape. {@link io.kvferry.registry.etcd.RegistryKeys} is the key
 * layout, shared with the bootstrap server's etcd store. A secured etcd is reached over TLS, with a client certificate
 * for mutual TLS, and as an etcd user ({@link io.kvferry.registry.etcd.EtcdBootstrapClient#tls(java.nio.file.Path)},
 * {@link io.kvferry.registry.etcd.EtcdBootstrapClient#credentials(String, String)}).
 *
 * <p><b>Why etcd's own client (jetcd).</b> jetcd 0.8 runs its gRPC channel on Vert.x 5, which is built on Netty 4.2,
 * so the project's pinned Netty (the netty BOM) serves both without a second Netty on the class path. Its
 * {@code grpc-netty} was compiled against Netty 4.1 and runs here on the BOM's 4.2 line; the module's tests exercise
 * every call this registry makes (leases and their renewal, transactions, watches, fail-over when a member of a
 * three-member cluster is killed) on that combination, with BlockHound watching for blocking calls. Over etcd's
 * HTTP/JSON gateway, fail-over between members, watch resumption and lease renewal would have to be written again;
 * jetcd does them. The etcd client lives on Vert.x event loops of its own: results reach Reactor subscribers there.
 */
@NullMarked
package io.kvferry.registry.etcd;

import org.jspecify.annotations.NullMarked;
