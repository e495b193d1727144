package io.kvferry.transport.ucx.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.Random;

import io.kvferry.DecodeSpec;
import io.kvferry.HostPort;
import io.kvferry.harness.KVCluster;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RoomResult;
import io.kvferry.test.InMemoryBootstrap;
import io.kvferry.transport.ucx.UcxKVTransport;
import io.kvferry.transport.ucx.UcxStats;
import io.kvferry.transport.ucx.UcxTestSupport;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Whole rooms through the engine over UCX: prefill and decode managers (a cluster of ranks with different TP sizes,
 * so blocks are head-sliced and strided) on transports of their own, every byte checked at decode against the pattern
 * prefill wrote, decode's ledger and a CRC32C per stripe judging each room, every page back afterwards. Over UCX's
 * shared-memory transports decode reads every block one-sided from prefill's registered pages; over its TCP transport
 * every byte comes in active messages. Page size 1 sends rooms as thousands of small pieces.
 */
class UcxClusterIT {

	private static final Duration T = Duration.ofSeconds(60);
	/**
	 * Pages of each rank's pool: the longest room (400 tokens, 25 pages of 16; 400 of 1) fits with room to scatter,
	 * rooms go one by one. Pools no larger keep a case to seconds: each is allocated, written and registered with UCX.
	 */
	private static int poolPages(int pageSize) {
		return pageSize == 1 ? 512 : 32;
	}
	/** Rooms per case, one after another over the same connections. */
	private static final int ROOMS = 3;

	@BeforeAll
	static void needsUcx() {
		UcxTestSupport.assumeUcx();
	}

	@ParameterizedTest(name = "{0} P{1} <-> D{2} page size {3}")
	// Each data path with head slicing (a TP pair of different sizes) and with page size 1; shared memory, the
	// one-sided path, slices both ways.
	@CsvSource({ "tcp,2,1,16", "shm,1,2,16", "shm,2,1,16", "shm,1,1,1", "tcp,1,1,1" })
	void roomsArriveByteExactJudgedByDecodesLedger(String kind, int prefillTp, int decodeTp, int pageSize) {
		boolean shm = kind.equals("shm");
		UcxKVTransport prefill = (shm ? UcxTestSupport.sharedMemory() : UcxTestSupport.tcp());
		UcxKVTransport decode = (shm ? UcxTestSupport.sharedMemory() : UcxTestSupport.tcp());
		ModelShape shape = ModelShape.llama3_8b().withLayers(4).withPageSize(pageSize);
		KVCluster cluster = KVCluster.builder().shape(shape).prefill(prefillTp, 1, 1).decode(decodeTp, 1)
				.capacity(poolPages(pageSize), 16).scatterRuns(pageSize == 1 ? 3 : 0).transport(prefill).decodeTransport(decode)
				.bootstrapClient(new InMemoryBootstrap()).bootstrapAddress(new HostPort("127.0.0.1", 8998))
				.customize(spec -> spec instanceof DecodeSpec d ? d.checksums(true) : spec).startNow(T);
		try {
			Random random = new Random(prefillTp * 10 + decodeTp + pageSize);
			long bytes = 0;
			for (long room = 1; room <= ROOMS; room++) {
				int tokens = 100 + random.nextInt(300);
				RoomResult r = cluster.run(room, tokens, 1 + random.nextInt(3), random).block(T);
				assertThat(r.failure()).as("room %d", room).isNull();
				assertThat(r.bytes()).isPositive();
				bytes += r.bytes();
			}
			assertThat(cluster.freeDecodePages()).as("every page came back").isEqualTo(poolPages(pageSize));
			UcxStats stats = decode.stats();
			if (shm) {
				// KV, aux and state bytes: at least the KV bytes the rooms counted.
				assertThat(stats.bytesRead()).as("read one-sided").isGreaterThanOrEqualTo(bytes);
				assertThat(stats.bytesInMessages()).isZero();
			}
			else {
				assertThat(stats.bytesInMessages()).as("came in active messages").isGreaterThanOrEqualTo(bytes);
				assertThat(stats.bytesRead()).isZero();
			}
		}
		finally {
			cluster.close().block(T);
			prefill.disposeNow(T);
			decode.disposeNow(T);
		}
	}
}
