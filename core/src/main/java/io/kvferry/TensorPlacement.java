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

	/** Writes this room's manifest (tensor count and a hash of names and sizes) into its row, on the sender. */
	public void writeManifest() {
		ByteBuf b = arena.manifests().wrap((long) row * arena.manifests().itemLen(), TensorArena.MANIFEST_BYTES);
		try {
			b.setLong(0, tensors.size());
			b.setLong(8, hash());
		}
		finally {
			b.release();
		}
	}

	/**
	 * @return whether the manifest in this room's row, as the sender wrote it and the room carried it, names the same
	 *         tensors of the same sizes as this placement: checked by the receiver once the room succeeded
	 */
	public boolean manifestMatches() {
		ByteBuf b = arena.manifests().wrap((long) row * arena.manifests().itemLen(), TensorArena.MANIFEST_BYTES);
		try {
			return b.getLong(0) == tensors.size() && b.getLong(8) == hash();
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

	private long hash() {
		long h = FNV_OFFSET;
		for (TensorArena.Tensor t : tensors) {
			for (byte b : t.name().getBytes(StandardCharsets.UTF_8)) {
				h = (h ^ (b & 0xff)) * FNV_PRIME;
			}
			h = (h ^ 0) * FNV_PRIME;
			for (int s = 0; s < 64; s += 8) {
				h = (h ^ ((t.bytes() >>> s) & 0xff)) * FNV_PRIME;
			}
		}
		return h;
	}
}
