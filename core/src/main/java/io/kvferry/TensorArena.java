package io.kvferry;

import java.util.List;
import java.util.Objects;

/**
 * Registered memory for rooms of tensors that are not KV layers: an encoder's multimodal embeddings on their way to
 * prefill, shards of weights between engines. The arena is a pool of equal chunks, as a KV pool is of pages; a room
 * moves named tensors of any size, each taking whole chunks, the last one in part. The engine picks the chunks (its
 * allocator, as for pages) and {@link #place} maps the room's tensors onto them in order; the sender and the receiver
 * then use the placement's chunks where a KV room uses pages. Every rule of a KV room holds: the receiver grants only
 * its chunks, judges Success by its own ledger, and the room takes stripes or the same-host path alike.
 *
 * <p>A second region holds one manifest row per room: the sender writes its tensors' names and sizes there
 * ({@link TensorPlacement#writeManifest}), the row travels as a KV room's aux row, and the receiver checks it against
 * its own placement before Success ({@link TensorPlacement#receive}), so a room whose two sides disagree on the tensors
 * fails {@link FailureCause#MISMATCH}, naming the first tensor that differs, even when their chunk counts agree.
 *
 * <pre>{@code
 * TensorArena arena = TensorArena.allocate(4096, 1 << 20, 64);       // 4 GiB of 1 MiB chunks, 64 manifest rows
 * PrefillKVManager encoder = KVManagerSpec.prefill().kvArgs(arena.kvArgs())...;
 * TensorPlacement out = arena.place(List.of(new TensorArena.Tensor("image_embeds", bytes)), chunks, row);
 * out.writeManifest();
 * KVSender sender = encoder.sender(room);
 * sender.init(out.chunks().length, out.row());
 * sender.send(out.chunks(), new int[0]);
 * }</pre>
 */
public final class TensorArena {

	/** The dtype both sides declare: the bytes are opaque to the transfer. */
	public static final String DTYPE = "tensor";
	/** Most tensors a room of an arena made by {@link #allocate} may carry: its manifest rows hold that many. */
	public static final int MAX_TENSORS = 64;

	private final MemoryRegion chunks;
	private final MemoryRegion manifests;

	private TensorArena(MemoryRegion chunks, MemoryRegion manifests) {
		this.chunks = Objects.requireNonNull(chunks, "chunks");
		this.manifests = Objects.requireNonNull(manifests, "manifests");
		if (manifests.itemLen() < manifestBytes(1)) {
			throw new IllegalArgumentException("manifest row : " + manifests.itemLen() + " bytes (expected: >= "
					+ manifestBytes(1) + ", room for one tensor)");
		}
	}

	/**
	 * @param tensors most tensors a room carries
	 * @return bytes of a manifest row for them: the tensor count, then a 64-bit hash of each tensor's name and size
	 */
	public static int manifestBytes(int tensors) {
		if (tensors < 1 || tensors > (Integer.MAX_VALUE - 8) / 8) {
			throw new IllegalArgumentException("tensors : " + tensors + " (expected: 1.." + (Integer.MAX_VALUE - 8) / 8
					+ ")");
		}
		return 8 + 8 * tensors;
	}

	/**
	 * Allocates an arena in direct memory (tests, examples, engines without their own pool).
	 *
	 * @param chunkCount chunks of the pool
	 * @param chunkBytes bytes of one chunk: the unit a room's tensors are placed in
	 * @param rows manifest rows, one per room in flight, each for up to {@value #MAX_TENSORS} tensors
	 * @return an arena owning its memory
	 */
	public static TensorArena allocate(long chunkCount, int chunkBytes, int rows) {
		return new TensorArena(MemoryRegion.allocate(chunkCount, chunkBytes),
				MemoryRegion.allocate(rows, manifestBytes(MAX_TENSORS)));
	}

	/**
	 * An arena over memory the engine owns.
	 *
	 * @param chunks the chunk pool; its item length is the chunk size
	 * @param manifests manifest rows of {@link #manifestBytes} for the most tensors a room carries
	 * @return the arena
	 */
	public static TensorArena of(MemoryRegion chunks, MemoryRegion manifests) {
		return new TensorArena(chunks, manifests);
	}

	/**
	 * @return the arena as a rank's registered memory: one buffer whose pages are the chunks (a page of one token,
	 *         one "head"), and the manifest rows as the aux region. Adjust the rank with {@link KVArgs#mutate()}.
	 */
	public KVArgs kvArgs() {
		return KVArgs.builder().kvRegions(List.of(chunks)).auxRegions(List.of(manifests)).pageSize(1).mla(true)
				.kvHeads(1, 1).dtype(DTYPE).build();
	}

	/** @return bytes of one chunk */
	public int chunkBytes() {
		return chunks.itemLen();
	}

	/** @return chunks in the pool */
	public long chunkCount() {
		return chunks.itemCount();
	}

	/** @return the address of a chunk, for an engine that writes or reads a tensor itself */
	public long chunkAddress(int chunk) {
		if (chunk < 0 || chunk >= chunkCount()) {
			throw new IndexOutOfBoundsException("chunk " + chunk + " (expected: 0.." + (chunkCount() - 1) + ")");
		}
		return chunks.itemAddress(chunk);
	}

	MemoryRegion manifests() {
		return manifests;
	}

	/** @return most tensors a room of this arena may carry: what its manifest rows hold */
	public int maxTensors() {
		return (manifests.itemLen() - 8) / 8;
	}

	/** @return how many chunks the tensors take: each starts on a chunk of its own */
	public int chunksFor(List<Tensor> tensors) {
		long n = 0;
		for (Tensor t : tensors) {
			n += (t.bytes() + chunkBytes() - 1) / chunkBytes();
		}
		if (n > Integer.MAX_VALUE) {
			throw new IllegalArgumentException("tensors : " + n + " chunks of " + chunkBytes() + " bytes (expected: "
					+ "at most " + Integer.MAX_VALUE + "; use larger chunks)");
		}
		return (int) n;
	}

	/**
	 * Maps a room's tensors onto chunks the engine picked: the first tensor on the first chunks, and so on.
	 *
	 * @param tensors the room's tensors, in the order both sides use; names distinct
	 * @param chunkIndices exactly {@link #chunksFor} distinct chunks of this arena
	 * @param row the room's manifest row
	 * @return the placement
	 * @throws IllegalArgumentException for another chunk count, a chunk out of range or twice, a duplicate name, more
	 *         tensors than a manifest row holds, or a row out of range
	 */
	public TensorPlacement place(List<Tensor> tensors, int[] chunkIndices, int row) {
		return new TensorPlacement(this, tensors, chunkIndices, row);
	}

	/**
	 * One named tensor of a room.
	 *
	 * @param name unique within the room
	 * @param bytes its size; zero is allowed (it takes no chunk)
	 */
	public record Tensor(String name, long bytes) {

		public Tensor {
			Objects.requireNonNull(name, "name");
			if (name.isEmpty() || bytes < 0) {
				throw new IllegalArgumentException("tensor '" + name + "' : " + bytes + " bytes (expected: a name and "
						+ ">= 0 bytes)");
			}
		}
	}
}
