package io.kvferry.transport.netty.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.Random;

import io.kvferry.DecodeSpec;
import io.kvferry.HostPort;
import io.kvferry.PrefillKVManager;
import io.kvferry.bootstrap.BootstrapException;
import io.kvferry.bootstrap.RegistryChange;
import io.kvferry.registry.etcd.EtcdBootstrapClient;
import io.kvferry.registry.etcd.EtcdCluster;
import io.kvferry.harness.KVCluster;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RoomResult;
import io.kvferry.transport.netty.NettyKVTransport;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;

/**
 * Prefill and decode managers over the Netty transport that find each other only through etcd (each role with its own
 * registry client) move rooms byte-exact; closing prefill withdraws its ranks and decode hears of it at once.
 */
class EtcdTransferIT {

	private static final Duration T = Duration.ofSeconds(60);
	private static final HostPort INSTANCE = HostPort.parse("prefill-a:8998");

	@Test
	void managersFindEachOtherThroughEtcdAndMoveRoomsByteExact() {
		try (EtcdCluster etcd = EtcdCluster.start(1)) {
			EtcdBootstrapClient prefillRegistry = EtcdBootstrapClient.create(etcd.uri()).prefix("transfer")
					.timeout(Duration.ofSeconds(15));
			EtcdBootstrapClient decodeRegistry = EtcdBootstrapClient.create(etcd.uri()).prefix("transfer")
					.timeout(Duration.ofSeconds(15));
			NettyKVTransport transport = NettyKVTransport.create();
			KVCluster cluster = KVCluster.builder().shape(ModelShape.llama3_8b()).prefill(2, 1, 1).decode(2, 1)
					.capacity(48, 16).transport(transport).bootstrapClient(prefillRegistry)
					.bootstrapAddress(INSTANCE)
					.customize(spec -> spec instanceof DecodeSpec d ? d.bootstrapClient(decodeRegistry) : spec)
					.startNow(T);
			try {
				Random random = new Random(7);
				for (long room = 1; room <= 4; room++) {
					RoomResult r = cluster.run(room, 1 + random.nextInt(40 * 16), 1 + random.nextInt(4), random)
							.block(T);
					assertThat(r.failure()).as("room %d", room).isNull();
					assertThat(r.bytes()).isPositive();
				}
				assertThat(cluster.freeDecodePages()).as("every page came back").isEqualTo(48);

				// Closing prefill revokes its leases: decode hears of both ranks at once, not a TTL later.
				StepVerifier.create(decodeRegistry.changes().take(2))
						.then(() -> cluster.prefillManagers().get(0).forEach(PrefillKVManager::dispose))
						.expectNextMatches(c -> c.kind() == RegistryChange.Kind.RANK_REMOVED)
						.expectNextMatches(c -> c.kind() == RegistryChange.Kind.RANK_REMOVED)
						.expectComplete()
						.verify(T);
				StepVerifier.create(decodeRegistry.rankEndpoint(INSTANCE, 0, 0, 0))
						.expectErrorSatisfies(e -> assertThat(((BootstrapException) e).kind())
								.isEqualTo(BootstrapException.Kind.NOT_FOUND))
						.verify(T);
			}
			finally {
				cluster.close().block(T);
				transport.disposeNow(T);
				prefillRegistry.dispose();
				decodeRegistry.dispose();
			}
		}
	}
}
