package io.kvferry.internal.stripe;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;

import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.RegionKind;
import io.kvferry.spi.ScatterBlock;
import io.kvferry.spi.ScatterHeader;
import io.kvferry.spi.SendGate;
import org.junit.jupiter.api.Test;

/** How prefill groups a chunk's small blocks into scatter blocks, and what it leaves alone. */
class ScatterGatherTest {

	private final SendGate gate = () -> true;
	private final List<Object> sent = new ArrayList<>();
	private final ScatterGather gather = new ScatterGather(sent::add, gate);

	private DataBlock piece(int region, long offset, int length, long src) {
		return new DataBlock(new DataHeader(7, RegionKind.KV, region, offset, length, 0, 1), src, 0, gate);
	}

	@Test
	void groupsCloseAt256PiecesAndEachIsAValidList() {
		for (int i = 0; i < 600; i++) {
			gather.send(piece(0, 2048L * (599 - i), 2048, 4096L * i));
		}
		gather.flush();
		assertThat(sent).hasSize(3).allSatisfy(o -> assertThat(o).isInstanceOf(ScatterBlock.class));
		int[] counts = sent.stream().mapToInt(o -> ((ScatterBlock) o).header().count()).toArray();
		assertThat(counts).containsExactly(256, 256, 88);
		for (Object o : sent) {
			ScatterBlock b = (ScatterBlock) o;
			b.header().validate(b.payloadLength());
			for (int i = 0; i < b.header().count(); i++) {
				// Sorted by destination, each piece still reads its own source.
				long dst = b.header().dstOffset(i);
				assertThat(b.srcAddress(i)).isEqualTo(4096L * (599 - dst / 2048));
			}
		}
	}

	@Test
	void shuffledPiecesOfManyGroupsKeepTheirOwnLengthAndSourceOnceSorted() {
		// Pages scattered over a pool: every group sorts, and the groups sent before must not change as later ones do.
		java.util.Random random = new java.util.Random(11);
		List<Long> slots = new ArrayList<>();
		for (long s = 0; s < 700; s++) {
			slots.add(s);
		}
		java.util.Collections.shuffle(slots, random);
		for (int region = 0; region < 2; region++) {
			for (long slot : slots) {
				int length = 100 + (int) (slot % 7) * 10;
				gather.send(piece(region, slot * 200, length, region * 1_000_000L + slot * 3));
			}
		}
		gather.flush();
		int pieces = 0;
		for (Object o : sent) {
			ScatterBlock b = (ScatterBlock) o;
			b.header().validate(b.payloadLength());
			for (int i = 0; i < b.header().count(); i++) {
				long slot = b.header().dstOffset(i) / 200;
				assertThat(b.header().length(i)).isEqualTo(100 + (int) (slot % 7) * 10);
				assertThat(b.srcAddress(i)).isEqualTo(b.header().region(i) * 1_000_000L + slot * 3);
				assertThat(b.isContiguous(i)).isTrue();
				pieces++;
			}
		}
		assertThat(pieces).isEqualTo(1400);
	}

	@Test
	void aContiguousKvBlockGivenByItsFieldsIsGatheredAsTheSameBlockWouldBe() {
		List<Object> byBlocks = new ArrayList<>();
		ScatterGather other = new ScatterGather(byBlocks::add, gate);
		long[][] blocks = { { 0, 4096, 2048, 10 }, { 0, 0, 2048, 20 }, { 1, 512, 100, 30 },
				{ 1, 8192, ScatterGather.SMALL, 40 }, { 1, 0, 64, 50 }, { 0, 0, 32, 60 } };
		for (long[] b : blocks) {
			gather.sendKv(7, (int) b[0], b[1], (int) b[2], b[3]);
			other.send(piece((int) b[0], b[1], (int) b[2], b[3]));
		}
		gather.flush();
		other.flush();
		assertThat(sent).hasSameSizeAs(byBlocks).hasSize(4);
		for (int k = 0; k < sent.size(); k++) {
			assertThat(describe(sent.get(k))).isEqualTo(describe(byBlocks.get(k)));
		}
		assertThat(sent.get(1)).as("a block of SMALL bytes or more goes alone").isInstanceOf(DataBlock.class);
	}

	private static String describe(Object o) {
		if (o instanceof DataBlock b) {
			return b.header() + " from " + b.srcAddress();
		}
		ScatterBlock b = (ScatterBlock) o;
		StringBuilder s = new StringBuilder(b.header().toString());
		for (int i = 0; i < b.header().count(); i++) {
			s.append(" [").append(b.header().region(i)).append(' ').append(b.header().dstOffset(i)).append(' ')
					.append(b.header().length(i)).append(" from ").append(b.srcAddress(i)).append(']');
		}
		return s.toString();
	}

	@Test
	void groupsCloseAtHalfAMebibyte() {
		for (int i = 0; i < 20; i++) {
			gather.send(piece(0, 60_000L * i, 60_000, 0));
		}
		gather.flush();
		assertThat(sent).extracting(o -> ((ScatterBlock) o).header().count()).containsExactly(8, 8, 4);
		assertThat(((ScatterBlock) sent.get(0)).payloadLength()).isLessThanOrEqualTo(ScatterGather.MAX_BYTES);
	}

	@Test
	void largeAndStridedBlocksPassThroughAfterTheGroupGatheredSoFar() {
		gather.send(piece(0, 0, 100, 0));
		gather.send(piece(0, 100, 100, 0));
		DataBlock large = piece(0, 1 << 20, ScatterGather.SMALL, 0);
		gather.send(large);
		DataBlock strided = new DataBlock(new DataHeader(7, RegionKind.KV, 1, 0, 16 << 10, 32 << 10, 4), 0, 1 << 20,
				gate);
		gather.send(strided);
		gather.send(piece(2, 0, 10, 0));
		gather.flush();
		assertThat(sent).hasSize(4);
		assertThat(sent.get(0)).isInstanceOf(ScatterBlock.class);
		assertThat(sent.get(1)).isSameAs(large);
		assertThat(sent.get(2)).isSameAs(strided);
		// A group of one goes as a plain block.
		assertThat(((DataBlock) sent.get(3)).header()).isEqualTo(new DataHeader(7, RegionKind.KV, 2, 0, 10, 0, 1));
	}

	@Test
	void aSmallHeadSliceOfSeveralTokensBecomesOnePiecePerToken() {
		gather.send(new DataBlock(new DataHeader(7, RegionKind.KV, 1, 4096 + 512, 512, 1024, 3), 1000, 2048, gate));
		gather.send(piece(1, 0, 512, 50));
		gather.flush();
		assertThat(sent).hasSize(1);
		ScatterBlock b = (ScatterBlock) sent.get(0);
		b.header().validate(b.payloadLength());
		assertThat(b.header().count()).isEqualTo(4);
		assertThat(b.header().dstOffset(0)).isZero();
		assertThat(b.srcAddress(0)).isEqualTo(50);
		for (int i = 1; i < 4; i++) {
			assertThat(b.header().dstOffset(i)).isEqualTo(4096 + 512 + 1024L * (i - 1));
			assertThat(b.srcAddress(i)).isEqualTo(1000 + 2048L * (i - 1));
			assertThat(b.header().length(i)).isEqualTo(512);
		}
	}

	@Test
	void aSmallBlockAdjacentOnTheReceiverBecomesOnePieceGatheredFromItsStridedSource() {
		// Two re-laid runs: 4 chunks of 256 bytes a token (2,048 bytes) apart in the source, and 8 chunks of 128 bytes
		// 1,024 bytes apart, each adjacent in the destination; sent in descending destination order, so the sort must
		// carry each piece's source shape along.
		gather.send(new DataBlock(new DataHeader(7, RegionKind.KV, 1, 8192, 256, 256, 4), 5256, 2048, gate));
		gather.send(new DataBlock(new DataHeader(7, RegionKind.KV, 1, 0, 128, 128, 8), 5000, 1024, gate));
		gather.send(piece(1, 1024, 100, 77));
		gather.flush();
		assertThat(sent).hasSize(1);
		ScatterBlock b = (ScatterBlock) sent.get(0);
		b.header().validate(b.payloadLength());
		assertThat(b.header().count()).isEqualTo(3);
		assertThat(b.header().dstOffset(0)).isZero();
		assertThat(b.header().length(0)).isEqualTo(1024);
		assertThat(b.srcAddress(0)).isEqualTo(5000);
		assertThat(b.srcChunk(0)).isEqualTo(128);
		assertThat(b.isContiguous(0)).isFalse();
		assertThat(b.header().dstOffset(1)).isEqualTo(1024);
		assertThat(b.isContiguous(1)).isTrue();
		assertThat(b.srcAddress(1)).isEqualTo(77);
		assertThat(b.header().dstOffset(2)).isEqualTo(8192);
		assertThat(b.srcAddress(2)).isEqualTo(5256);
		assertThat(b.piece(0).srcStride()).isEqualTo(1024);
		List<Long> chunks = new ArrayList<>();
		b.chunks(2, (address, length) -> {
			assertThat(length).isEqualTo(256);
			chunks.add(address);
		});
		assertThat(chunks).containsExactly(5256L, 7304L, 9352L, 11400L);
		// Sent alone, such a piece is the strided block it came from.
		assertThat(b.piece(2).header()).isEqualTo(new DataHeader(7, RegionKind.KV, 1, 8192, 256, 256, 4));
		assertThat(b.piece(2).srcStride()).isEqualTo(2048);
	}

	@Test
	void aGroupOfOneGatheredPieceGoesAsItsStridedBlock() {
		DataBlock relaid = new DataBlock(new DataHeader(7, RegionKind.KV, 1, 0, 256, 256, 4), 5000, 2048, gate);
		gather.send(relaid);
		gather.flush();
		assertThat(sent).hasSize(1);
		DataBlock alone = (DataBlock) sent.get(0);
		assertThat(alone.header()).isEqualTo(relaid.header());
		assertThat(alone.srcAddress()).isEqualTo(5000);
		assertThat(alone.srcStride()).isEqualTo(2048);
	}

	@Test
	void aLowerRegionOrAnotherKindStartsANewGroup() {
		gather.send(piece(3, 0, 10, 0));
		gather.send(piece(3, 10, 10, 0));
		gather.send(piece(4, 0, 10, 0));
		gather.send(piece(1, 0, 10, 0));
		gather.send(piece(1, 10, 10, 0));
		gather.send(new DataBlock(new DataHeader(7, RegionKind.AUX, 0, 0, 10, 0, 1), 0, 0, gate));
		gather.flush();
		assertThat(sent).hasSize(3);
		ScatterHeader first = ((ScatterBlock) sent.get(0)).header();
		assertThat(first.count()).isEqualTo(3);
		assertThat(first.region(2)).isEqualTo(4);
		assertThat(((ScatterBlock) sent.get(1)).header().region(0)).isEqualTo(1);
		assertThat(((DataBlock) sent.get(2)).header().kind()).isEqualTo(RegionKind.AUX);
	}
}
