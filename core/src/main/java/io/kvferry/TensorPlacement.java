package io.kvferry;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

import io.kvferry.spi.NativeMemory;
import io.netty.buffer.ByteBuf;
import org.jspecify.annotations.Nullable;

/**
 * A room's named tensors placed on chunks of a {@link TensorArena}: which chunks hold which tensor, the room's
 * manifest row, and copies in and out for engines that do not write the chunks themselves. Immutable; the memory it
 * describes is the engine's.
 */
public final class TensorPlacement {

	private static final long FNV_OFFSET = 0xcbf29ce484222325L;
	private static final long FNV_PRIME = 0x100000001b3L;

	private final TensorArena arena;
	private final List<TensorArena.Tensor> tensors;
	private final int[] chunks;
	private final int row;
	private final Map<String, Integer> firstChunk = new HashMap<>();

	TensorPlacement(TensorArena arena, List<TensorArena.Tensor> tensors, int[] chunkIndices, int row) {
		this.arena = arena;
		this.tensors = List.copyOf(tensors);
		this.chunks = chunkIndices.clone();
		this.row = row;
		int needed = arena.chunksFor(this.tensors);
		if (chunks.length != needed) {
			throw new IllegalArgumentException("chunks : " + chunks.length + " (expected: " + needed + " for "
					+ this.tensors.size() + " tensors in " + arena.chunkBytes() + "-byte chunks)");
		}
		BitSet seen = new BitSet();
		for (int c : chunks) {
			if (c < 0 || c >= arena.chunkCount() || seen.get(c)) {
				throw new IllegalArgumentException("chunk " + c + " (expected: distinct chunks in 0.."
						+ (arena.chunkCount() - 1) + ")");
			}
			seen.set(c);
		}
		if (this.tensors.size() > arena.maxTensors()) {
			throw new IllegalArgumentException("tensors : " + this.tensors.size() + " (expected: at most "
					+ arena.maxTensors() + ", what a manifest row of " + arena.manifests().itemLen() + " bytes holds)");
		}
		if (row < 0 || row >= arena.manifests().itemCount()) {
			throw new IllegalArgumentException("row : " + row + " (expected: 0.." + (arena.manifests().itemCount() - 1)
					+ ")");
		}
		int next = 0;
		for (TensorArena.Tensor t : this.tensors) {
			if (firstChunk.putIfAbsent(t.name(), next) != null) {
				throw new IllegalArgumentException("tensor '" + t.name() + "' : named twice (expected: distinct names)");
			}
			next += chunkCount(t);
		}
	}

	/** @return the room's chunks in order: what {@code sendMetadata} and {@code send} take as pages */
	public int[] chunks() {
		return chunks.clone();
	}

	/** @return the room's manifest row: the aux index of {@code sendMetadata} and {@code init} */
	public int row() {
		return row;
	}

	public List<TensorArena.Tensor> tensors() {
		return tensors;
	}

	/** @return the chunks holding one tensor, in order */
	public int[] chunksOf(String name) {
		TensorArena.Tensor t = tensor(name);
		int first = Objects.requireNonNull(firstChunk.get(name), name);
		int[] out = new int[chunkCount(t)];
		System.arraycopy(chunks, first, out, 0, out.length);
		return out;
	}

	/**
	 * Copies a tensor's bytes into its chunks (the engine's write before sending).
	 *
	 * @param name the tensor
	 * @param src exactly the tensor's bytes, from its position; the position is left unchanged
	 */
	public void write(String name, ByteBuffer src) {
		copy(name, src, true);
	}

	/**
	 * Copies a tensor's bytes out of its chunks (after the room succeeded on the receiver).
	 *
	 * @param name the tensor
	 * @param dst room for exactly the tensor's bytes, from its position; the position is left unchanged
	 */
	public void read(String name, ByteBuffer dst) {
		copy(name, dst, false);
	}

	/**
	 * Writes this room's manifest into its row, on the sender: the tensor count, then a hash of each tensor's name and
	 * size.
	 */
	public void writeManifest() {
		ByteBuf b = manifestRow();
		try {
			b.setLong(0, tensors.size());
			for (int i = 0; i < tensors.size(); i++) {
				b.setLong(8 + 8 * i, hash(tensors.get(i)));
			}
		}
		finally {
			b.release();
		}
	}

	/**
	 * Asks for this room on the receiver ({@code sendMetadata} with its chunks and manifest row) and has decode check
	 * the manifest before Success: a room whose sender meant other tensors fails {@link FailureCause#MISMATCH}, its
	 * reason naming the first tensor that differs ({@link #manifestMismatch}).
	 *
	 * @param receiver the room's receiver, not asked yet
	 */
	public void receive(KVReceiver receiver) {
		receiver.verify(this::manifestMismatch);
		receiver.sendMetadata(chunks.clone(), row, new int[0]);
	}

	/**
	 * @return whether the manifest in this room's row, as the sender wrote it and the room carried it, names the same
	 *         tensors of the same sizes as this placement
	 */
	public boolean manifestMatches() {
		return manifestMismatch() == null;
	}

	/**
	 * Compares the manifest in this room's row, as the sender wrote it and the room carried it, with this placement,
	 * tensor by tensor in order. The row is the sender's: its count is read within this arena's bounds.
	 *
	 * @return null when both name the same tensors of the same sizes; else the first tensor that differs, by its
	 *         position, name and size here
	 */
	public @Nullable String manifestMismatch() {
		ByteBuf b = manifestRow();
		try {
			long count = b.getLong(0);
			int n = tensors.size();
			long common = Math.min(n, Math.max(0, Math.min(count, arena.maxTensors())));
			for (int i = 0; i < common; i++) {
				if (b.getLong(8 + 8 * i) != hash(tensors.get(i))) {
					return describe(i) + " differs from the sender's tensor " + i + " (another name or size)";
				}
			}
			if (count == n) {
				return null;
			}
			if (count >= 0 && count < n) {
				return describe((int) count) + " is missing: the sender's manifest names " + count + " tensors "
						+ "(expected: " + n + ")";
			}
			return "the sender's manifest names " + Long.toUnsignedString(count) + " tensors (expected: " + n
					+ "): tensor " + n + " is one this room does not have";
		}
		finally {
			b.release();
		}
	}

	private void copy(String name, ByteBuffer buffer, boolean in) {
		TensorArena.Tensor t = tensor(name);
		if (buffer.remaining() != t.bytes()) {
			throw new IllegalArgumentException("tensor '" + name + "' : " + buffer.remaining() + " bytes given "
					+ "(expected: " + t.bytes() + ")");
		}
		int chunkBytes = arena.chunkBytes();
		int first = Objects.requireNonNull(firstChunk.get(name), name);
		long done = 0;
		for (int i = 0; done < t.bytes(); i++) {
			int n = (int) Math.min(chunkBytes, t.bytes() - done);
			ByteBuffer part = buffer.duplicate();
			part.position(buffer.position() + (int) done).limit(buffer.position() + (int) done + n);
			ByteBuf chunk = NativeMemory.wrap(arena.chunkAddress(chunks[first + i]), n);
			try {
				if (in) {
					chunk.setBytes(0, part);
				}
				else {
					chunk.getBytes(0, part);
				}
			}
			finally {
				chunk.release();
			}
			done += n;
		}
	}

	private TensorArena.Tensor tensor(String name) {
		for (TensorArena.Tensor t : tensors) {
			if (t.name().equals(name)) {
				return t;
			}
		}
		throw new IllegalArgumentException("tensor '" + name + "' : not in this room (expected one of "
				+ tensors.stream().map(TensorArena.Tensor::name).toList() + ")");
	}

	private int chunkCount(TensorArena.Tensor t) {
		return (int) ((t.bytes() + arena.chunkBytes() - 1) / arena.chunkBytes());
	}

	private String describe(int i) {
		TensorArena.Tensor t = tensors.get(i);
		return "tensor " + i + " '" + t.name() + "' (" + t.bytes() + " bytes)";
	}

	private ByteBuf manifestRow() {
		MemoryRegion rows = arena.manifests();
		return rows.wrap((long) row * rows.itemLen(), rows.itemLen());
	}

	private static long hash(TensorArena.Tensor t) {
		long h = FNV_OFFSET;
		for (byte b : t.name().getBytes(StandardCharsets.UTF_8)) {
			h = (h ^ (b & 0xff)) * FNV_PRIME;
		}
		h = (h ^ 0) * FNV_PRIME;
		for (int s = 0; s < 64; s += 8) {
			h = (h ^ ((t.bytes() >>> s) & 0xff)) * FNV_PRIME;
		}
		return h;
	}
}
