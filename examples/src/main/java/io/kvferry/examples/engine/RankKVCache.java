package io.kvferry.examples.engine;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.ArrayList;
import java.util.List;

import io.kvferry.KVArgs;
import io.kvferry.MemoryRegion;
import io.kvferry.spi.NativeMemory;

/**
 * The KV cache of one attention TP rank, laid out as SGLang's MHA token pool: per layer one K buffer and one V buffer
 * in native memory, each {@code [pages][pageSize][kvHeadsOfThisRank][headDim]} fp32, plus one buffer of aux rows.
 *
 * <p>Its {@link #kvArgs()} is what the rank registers with kvferry: the K buffers of all layers, then the V buffers
 * (one region each, one item = one page of one layer buffer, so {@code itemLen = pageSize × heads × headDim × 4}),
 * the aux buffer (one item = one row), page size, KV heads of this rank and of the model, and the dtype tag
 * {@code fp32}. Page indices handed to kvferry are item indices of every one of these regions at once.
 *
 * <p>Aux row layout ({@value #AUX_ROW_BYTES} bytes, the smallest row SGLang registers): the first sampled token as a
 * little-endian int32 at offset 0, and the room as an int64 at offset 8, a stamp decode checks before trusting the
 * row. Not thread-safe: written by the rank's forward pass and read by its scheduler.
 */
public final class RankKVCache {

	/** Bytes of one aux row. */
	public static final int AUX_ROW_BYTES = 64;
	/** The dtype tag both sides register; a peer with another tag is refused at the handshake. */
	public static final String DTYPE = "fp32";

	private final int rank;
	private final int pageSize;
	private final int heads;
	private final int headDim;
	private final KVArgs kvArgs;
	private final FloatBuffer[] k;
	private final FloatBuffer[] v;
	private final ByteBuffer aux;

	RankKVCache(TinyConfig config, HeadLayout layout, int rank, int pageSize, int pages, int auxRows) {
		this.rank = rank;
		this.pageSize = pageSize;
		this.heads = layout.kvHeadsPerRank();
		this.headDim = config.headDim();
		int itemLen = pageSize * heads * config.headBytes();
		List<MemoryRegion> kRegions = new ArrayList<>();
		List<MemoryRegion> vRegions = new ArrayList<>();
		k = new FloatBuffer[config.layers()];
		v = new FloatBuffer[config.layers()];
		for (int l = 0; l < config.layers(); l++) {
			MemoryRegion kr = MemoryRegion.allocate(pages, itemLen);
			MemoryRegion vr = MemoryRegion.allocate(pages, itemLen);
			kRegions.add(kr);
			vRegions.add(vr);
			k[l] = view(kr).asFloatBuffer();
			v[l] = view(vr).asFloatBuffer();
		}
		MemoryRegion auxRegion = MemoryRegion.allocate(auxRows, AUX_ROW_BYTES);
		aux = view(auxRegion);
		List<MemoryRegion> kv = new ArrayList<>(kRegions);
		kv.addAll(vRegions);
		kvArgs = KVArgs.builder()
				.engineRank(rank)
				.kvRegions(kv)
				.auxRegions(List.of(auxRegion))
				.pageSize(pageSize)
				.kvHeads(heads, layout.totalKvHeads())
				.dtype(DTYPE)
				.build();
	}

	// Little-endian whatever the host: the byte order of the registered bytes is part of the wire format.
	private static ByteBuffer view(MemoryRegion region) {
		return NativeMemory.byteBuffer(region.address(), Math.toIntExact(region.length())).order(ByteOrder.LITTLE_ENDIAN);
	}

	/** @return this rank's attention TP rank */
	public int rank() {
		return rank;
	}

	/** @return KV heads in each token of this rank's buffers */
	public int heads() {
		return heads;
	}

	/** @return the registered memory and layout of this rank */
	public KVArgs kvArgs() {
		return kvArgs;
	}

	/** @return layer {@code layer}'s K buffer as floats over its native memory */
	public FloatBuffer k(int layer) {
		return k[layer];
	}

	/** @return layer {@code layer}'s V buffer as floats over its native memory */
	public FloatBuffer v(int layer) {
		return v[layer];
	}

	/**
	 * @param page page index (an item index of every KV region)
	 * @param slot token slot in the page
	 * @param position head position in the token
	 * @return the float index of element 0 of that head, in any layer's K or V buffer
	 */
	public int index(int page, int slot, int position) {
		// Fits an int: a buffer holds at most 2^31 - 1 bytes, a quarter as many floats.
		return ((page * pageSize + slot) * heads + position) * headDim;
	}

	/** Writes a request's aux row: its first sampled token and the room stamp. */
	public void writeAux(int row, int firstToken, long room) {
		aux.putInt(row * AUX_ROW_BYTES, firstToken);
		aux.putLong(row * AUX_ROW_BYTES + 8, room);
	}

	/** @return the first sampled token in aux row {@code row} */
	public int auxToken(int row) {
		return aux.getInt(row * AUX_ROW_BYTES);
	}

	/** @return the room stamp in aux row {@code row} (0 when nothing landed there) */
	public long auxRoom(int row) {
		return aux.getLong(row * AUX_ROW_BYTES + 8);
	}

	/** Clears an aux row before it is reused, so that a stale stamp is never mistaken for a landed row. */
	public void clearAux(int row) {
		for (int i = 0; i < AUX_ROW_BYTES; i += Long.BYTES) {
			aux.putLong(row * AUX_ROW_BYTES + i, 0);
		}
	}

	/** Fills every K and V buffer with NaN, as uninitialised memory: a read of a slot nobody wrote poisons the logits. */
	void poison() {
		for (int l = 0; l < k.length; l++) {
			for (FloatBuffer b : new FloatBuffer[] { k[l], v[l] }) {
				for (int i = 0; i < b.capacity(); i++) {
					b.put(i, Float.NaN);
				}
			}
		}
	}
}
