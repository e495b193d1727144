package io.kvferry.internal.stripe;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import io.kvferry.DecodeSpec;
import io.kvferry.HostPort;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.RegionKind;
import io.kvferry.test.InMemoryBootstrap;
import io.kvferry.harness.KVCluster;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RoomResult;
import io.kvferry.transport.local.InMemoryKVTransport;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

/** How a block is cut into pieces for the stripes, and rooms of blocks larger than a piece moved byte-exact. */
class StripesTest {

	private static final Duration T = Duration.ofSeconds(30);

	private static List<DataBlock> cut(DataBlock block, int max) {
		List<DataBlock> out = new ArrayList<>();
		Stripes.cut(block, max, out::add);
		return out;
	}

	@Test
	void aSmallBlockIsDealtWhole() {
		DataBlock b = new DataBlock(new DataHeader(1, RegionKind.KV, 0, 64, 100, 0, 1), 1000, 0);
		assertThat(cut(b, 100)).containsExactly(b);
	}

	@Test
	void aContiguousBlockIsCutIntoByteRunsInOrder() {
		DataBlock b = new DataBlock(new DataHeader(1, RegionKind.KV, 2, 64, 250, 0, 1), 1000, 0);
		List<DataBlock> pieces = cut(b, 100);
		assertThat(pieces).extracting(p -> p.header().dstOffset()).containsExactly(64L, 164L, 264L);
		assertThat(pieces).extracting(p -> p.header().chunkLen()).containsExactly(100, 100, 50);
		assertThat(pieces).extracting(DataBlock::srcAddress).containsExactly(1000L, 1100L, 1200L);
		assertThat(pieces).allSatisfy(p -> {
			assertThat(p.header().count()).isEqualTo(1);
			assertThat(p.header().region()).isEqualTo(2);
			assertThat(p.gate()).isSameAs(b.gate());
		});
	}

	@Test
	void aStridedBlockIsCutIntoRunsOfWholeChunks() {
		// 10 chunks of 30 bytes, 70 apart on the receiver and 40 apart at the source; at most 100 bytes a piece.
		DataBlock b = new DataBlock(new DataHeader(1, RegionKind.KV, 0, 5, 30, 70, 10), 1000, 40);
		List<DataBlock> pieces = cut(b, 100);
		assertThat(pieces).extracting(p -> p.header().count()).containsExactly(3, 3, 3, 1);
		assertThat(pieces).extracting(p -> p.header().dstOffset()).containsExactly(5L, 215L, 425L, 635L);
		assertThat(pieces).extracting(DataBlock::srcAddress).containsExactly(1000L, 1120L, 1240L, 1360L);
		assertThat(pieces).allSatisfy(p -> {
			assertThat(p.header().chunkLen()).isEqualTo(30);
			assertThat(p.header().dstStride()).isEqualTo(70);
			assertThat(p.srcStride()).isEqualTo(40);
		});
		assertThat(pieces.stream().mapToLong(p -> p.header().payloadLength()).sum()).isEqualTo(300);
	}

	@Test
	void aChunkLongerThanAPieceStaysWhole() {
		DataBlock b = new DataBlock(new DataHeader(1, RegionKind.KV, 0, 0, 300, 400, 3), 1000, 300);
		assertThat(cut(b, 100)).extracting(p -> p.header().count()).containsExactly(1, 1, 1);
	}

	/**
	 * 128 KiB pages, rooms of up to 96 contiguous pages: whole blocks of 12 MiB, and head slices of 6 MiB when decode
	 * runs TP 2, cut into 4 MiB pieces over three stripes, checksummed.
	 */
	@ParameterizedTest(name = "prefill TP {0} -> decode TP {1}")
	@CsvSource({ "1, 1", "1, 2", "2, 1" })
	void roomsOfBlocksLargerThanAPieceArriveByteExact(int prefillTp, int decodeTp) {
		ModelShape shape = new ModelShape(2, 8, 128, 2, 64, false, 0, 64, 0);
		KVCluster cluster = KVCluster.builder().shape(shape).prefill(prefillTp, 1, 1).decode(decodeTp, 1)
				.capacity(128, 4).contiguous(true).transport(InMemoryKVTransport.create())
				.bootstrapClient(new InMemoryBootstrap()).bootstrapAddress(new HostPort("127.0.0.1", 8998))
				.customize(s -> s instanceof DecodeSpec d ? d.stripes(3).checksums(true) : s).startNow(T);
		try {
			Random random = new Random(7);
			for (long room = 1; room <= 3; room++) {
				RoomResult r = cluster.run(room, 64 * (48 + random.nextInt(49)), 1 + random.nextInt(2), random)
						.block(T);
				assertThat(r).isNotNull();
				assertThat(r.failure()).as("room %d", room).isNull();
			}
		}
		finally {
			cluster.close().block(T);
		}
	}
}
