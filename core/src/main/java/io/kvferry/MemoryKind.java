package io.kvferry;

import java.util.Objects;

/**
 * Where a {@link MemoryRegion}'s bytes live: host memory, which the JVM reads and writes through native addresses, or
 * an accelerator's memory, which only a transport that can reach it (a UCX built with CUDA or ROCm support) may move.
 * A transport that moves host memory only refuses device regions when a rank registers them
 * ({@link io.kvferry.spi.KVTransport#register}), before any byte is touched.
 *
 * @param type the memory's type
 * @param device the device's index for device memory ({@code cuda:0}); -1 for host memory
 */
public record MemoryKind(Type type, int device) {

	/** Ordinary host memory, the default of every region. */
	public static final MemoryKind HOST = new MemoryKind(Type.HOST, -1);

	/** The type of memory, as UCX's memory types name them. */
	public enum Type {
		/** Host memory (pageable or pinned). */
		HOST,
		/** NVIDIA GPU memory. */
		CUDA,
		/** AMD GPU memory. */
		ROCM
	}

	public MemoryKind {
		Objects.requireNonNull(type, "type");
		if (type == Type.HOST ? device != -1 : device < 0) {
			throw new IllegalArgumentException("memory kind : " + type + " device " + device
					+ " (expected: host memory with device -1, device memory with an index >= 0)");
		}
	}

	/** @return the memory of CUDA device {@code index} */
	public static MemoryKind cuda(int index) {
		return new MemoryKind(Type.CUDA, index);
	}

	/** @return the memory of ROCm device {@code index} */
	public static MemoryKind rocm(int index) {
		return new MemoryKind(Type.ROCM, index);
	}

	/** @return whether the JVM can read and write the memory through native addresses */
	public boolean isHost() {
		return type == Type.HOST;
	}

	/** @return {@code host}, {@code cuda:0}, {@code rocm:1} */
	@Override
	public String toString() {
		return isHost() ? "host" : type.name().toLowerCase(java.util.Locale.ROOT) + ":" + device;
	}
}
