package io.kvferry;

import java.nio.ByteBuffer;
import java.util.List;

import io.kvferry.TensorArena.Tensor;
import io.kvferry.spi.NativeMemory;
import io.netty.buffer.ByteBuf;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Placing a room's named tensors on an arena's chunks: each tensor on whole chunks in order, copies in and out
 * through scattered chunks, the manifest telling two different tensor lists apart, and every wrong input refused with
 * a message naming it.
 */
class TensorArenaTest {

	private static final List<Tensor> TENSORS = List.of(new Tensor("a", 100), new Tensor("empty", 0),
			new Tensor("b", 64));

	private final TensorArena arena = TensorArena.allocate(8, 32, 2);

	@Test
	void tensorsTakeWholeChunksInOrderAndCopyThroughScatteredChunks() {
		assertThat(arena.chunksFor(TENSORS)).isEqualTo(4 + 0 + 2);
		TensorPlacement p = arena.place(TENSORS, new int[] { 7, 0, 5, 2, 6, 1 }, 1);

		assertThat(p.chunksOf("a")).containsExactly(7, 0, 5, 2);
		assertThat(p.chunksOf("empty")).isEmpty();
		assertThat(p.chunksOf("b")).containsExactly(6, 1);
		byte[] a = new byte[100];
		for (int i = 0; i < a.length; i++) {
			a[i] = (byte) (i + 1);
		}
		p.write("a", ByteBuffer.wrap(a));
		ByteBuffer back = ByteBuffer.allocateDirect(100);
		p.read("a", back);
		byte[] got = new byte[100];
		back.get(got);
		assertThat(got).isEqualTo(a);
		// The tensor's fourth chunk holds its last 4 bytes: chunk 2 starts with byte 97.
		ByteBuf chunk = NativeMemory.wrap(arena.chunkAddress(2), 4);
		try {
			assertThat(chunk.getByte(0)).isEqualTo((byte) 97);
		}
		finally {
			chunk.release();
		}
	}

	@Test
	void theManifestTellsTensorListsApart() {
		TensorPlacement p = arena.place(TENSORS, new int[] { 0, 1, 2, 3, 4, 5 }, 0);
		p.writeManifest();
		assertThat(p.manifestMatches()).isTrue();

		List<Tensor> renamed = List.of(new Tensor("a", 100), new Tensor("empty", 0), new Tensor("c", 64));
		assertThat(arena.place(renamed, new int[] { 0, 1, 2, 3, 4, 5 }, 0).manifestMatches()).isFalse();
		List<Tensor> resized = List.of(new Tensor("a", 99), new Tensor("empty", 0), new Tensor("b", 64));
		assertThat(arena.place(resized, new int[] { 0, 1, 2, 3, 4, 5 }, 0).manifestMatches()).isFalse();
		assertThat(arena.place(TENSORS, new int[] { 0, 1, 2, 3, 4, 5 }, 1).manifestMatches())
				.as("another row, never written").isFalse();
	}

	@Test
	void theMismatchNamesTheFirstTensorThatDiffers() {
		arena.place(TENSORS, new int[] { 0, 1, 2, 3, 4, 5 }, 0).writeManifest();

		assertThat(arena.place(TENSORS, new int[] { 0, 1, 2, 3, 4, 5 }, 0).manifestMismatch()).isNull();
		List<Tensor> renamed = List.of(new Tensor("a", 100), new Tensor("empty", 0), new Tensor("c", 64));
		assertThat(arena.place(renamed, new int[] { 0, 1, 2, 3, 4, 5 }, 0).manifestMismatch())
				.isEqualTo("tensor 2 'c' (64 bytes) differs from the sender's tensor 2 (another name or size)");
		List<Tensor> resized = List.of(new Tensor("a", 99), new Tensor("empty", 0), new Tensor("b", 64));
		assertThat(arena.place(resized, new int[] { 0, 1, 2, 3, 4, 5 }, 0).manifestMismatch())
				.isEqualTo("tensor 0 'a' (99 bytes) differs from the sender's tensor 0 (another name or size)");
		List<Tensor> longer = List.of(new Tensor("a", 100), new Tensor("empty", 0), new Tensor("b", 64),
				new Tensor("d", 1));
		assertThat(arena.place(longer, new int[] { 0, 1, 2, 3, 4, 5, 6 }, 0).manifestMismatch())
				.isEqualTo("tensor 3 'd' (1 bytes) is missing: the sender's manifest names 3 tensors (expected: 4)");
		List<Tensor> shorter = List.of(new Tensor("a", 100), new Tensor("empty", 0));
		assertThat(arena.place(shorter, new int[] { 0, 1, 2, 3 }, 0).manifestMismatch())
				.isEqualTo("the sender's manifest names 3 tensors (expected: 2): tensor 2 is one this room does not have");
	}

	@Test
	void aSendersCountBeyondTheRowIsReadAsAMismatchNotAnIndex() {
		TensorPlacement p = arena.place(TENSORS, new int[] { 0, 1, 2, 3, 4, 5 }, 0);
		p.writeManifest();
		for (long count : new long[] { -1, Long.MIN_VALUE, TensorArena.MAX_TENSORS + 1, Long.MAX_VALUE }) {
			ByteBuf row = NativeMemory.wrap(manifestRowAddress(0), 8);
			try {
				row.setLong(0, count);
			}
			finally {
				row.release();
			}
			assertThat(p.manifestMismatch()).as("count %s", count).startsWith("the sender's manifest names ")
					.endsWith("(expected: 3): tensor 3 is one this room does not have");
		}
	}

	private long manifestRowAddress(int row) {
		return arena.manifests().itemAddress(row);
	}

	@Test
	void theArenaIsOneChunkBufferWithPageSizeOneAndTheManifestRowsAsAux() {
		KVArgs args = arena.kvArgs();
		assertThat(args.kvRegions()).hasSize(1);
		assertThat(args.kvRegions().get(0).itemLen()).isEqualTo(32);
		assertThat(args.pageSize()).isEqualTo(1);
		assertThat(args.isMla()).isTrue();
		assertThat(args.dtype()).isEqualTo(TensorArena.DTYPE);
		assertThat(args.auxRegions()).hasSize(1);
	}

	@Test
	void wrongInputIsRefusedNamingIt() {
		assertThatThrownBy(() -> arena.place(TENSORS, new int[] { 0, 1, 2 }, 0))
				.hasMessage("chunks : 3 (expected: 6 for 3 tensors in 32-byte chunks)");
		assertThatThrownBy(() -> arena.place(TENSORS, new int[] { 0, 1, 2, 3, 4, 4 }, 0))
				.hasMessage("chunk 4 (expected: distinct chunks in 0..7)");
		assertThatThrownBy(() -> arena.place(TENSORS, new int[] { 0, 1, 2, 3, 4, 8 }, 0))
				.hasMessage("chunk 8 (expected: distinct chunks in 0..7)");
		assertThatThrownBy(() -> arena.place(TENSORS, new int[] { 0, 1, 2, 3, 4, 5 }, 2))
				.hasMessage("row : 2 (expected: 0..1)");
		assertThatThrownBy(() -> arena.place(List.of(new Tensor("a", 1), new Tensor("a", 1)), new int[] { 0, 1 }, 0))
				.hasMessage("tensor 'a' : named twice (expected: distinct names)");
		TensorPlacement p = arena.place(TENSORS, new int[] { 0, 1, 2, 3, 4, 5 }, 0);
		assertThatThrownBy(() -> p.write("a", ByteBuffer.allocate(99)))
				.hasMessage("tensor 'a' : 99 bytes given (expected: 100)");
		assertThatThrownBy(() -> p.chunksOf("z")).hasMessage("tensor 'z' : not in this room (expected one of [a, empty, b])");
		assertThatThrownBy(() -> new Tensor("", 1)).hasMessage("tensor '' : 1 bytes (expected: a name and >= 0 bytes)");
		assertThatThrownBy(() -> TensorArena.of(MemoryRegion.allocate(1, 8), MemoryRegion.allocate(1, 8)))
				.hasMessage("manifest row : 8 bytes (expected: >= 16, room for one tensor)");
		TensorArena one = TensorArena.of(MemoryRegion.allocate(8, 32), MemoryRegion.allocate(1, 16));
		assertThat(one.maxTensors()).isEqualTo(1);
		assertThatThrownBy(() -> one.place(TENSORS, new int[] { 0, 1, 2, 3, 4, 5 }, 0))
				.hasMessage("tensors : 3 (expected: at most 1, what a manifest row of 16 bytes holds)");
	}
}
