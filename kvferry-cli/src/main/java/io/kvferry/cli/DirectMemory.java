package io.kvferry.cli;

import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;

import io.kvferry.harness.ModelShape;
import io.netty.util.internal.PlatformDependent;
import picocli.CommandLine;

/**
 * Sizes KV pools in bytes and checks them against the JVM's direct memory limit up front, so a too-large batch fails
 * at once with advice instead of an {@link OutOfMemoryError} half-way.
 */
final class DirectMemory {

	// Transport buffers, frame gathering and the JDK's own direct buffers: an eighth of the limit, at most 64 MiB.
	private static final long MAX_HEADROOM = 64L << 20;

	private DirectMemory() {
	}

	/**
	 * @return KV bytes one instance holds for {@code pages} pages per rank: every rank of every DP group, all its
	 *         layer buffers
	 */
	static long instanceBytes(ModelShape shape, int tp, int pp, int dp, long pages) {
		long perRank = (long) shape.itemLen(tp) * (shape.layers() / pp) * (shape.mla() ? 1 : 2) * pages;
		return perRank * tp * pp * dp;
	}

	/** @return the JVM's direct memory limit in bytes */
	static long limit() {
		return PlatformDependent.maxDirectMemory();
	}

	/** @return direct memory in use by NIO buffers now */
	static long used() {
		for (BufferPoolMXBean pool : ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class)) {
			if (pool.getName().equals("direct")) {
				return pool.getMemoryUsed();
			}
		}
		return 0;
	}

	/**
	 * @param needed bytes about to be allocated
	 * @param advice what to change when they do not fit
	 * @throws CommandLine.ParameterException when they do not fit
	 */
	static void check(CommandLine cl, long needed, String advice) {
		long available = limit() - used() - Math.min(MAX_HEADROOM, limit() / 8);
		if (needed > available) {
			throw new CommandLine.ParameterException(cl, "KV pools : " + Sizes.bytes(needed) + " (expected: at most "
					+ Sizes.bytes(Math.max(0, available)) + " of direct memory this JVM allows; " + advice
					+ ", or raise -XX:MaxDirectMemorySize, e.g. KVFERRY_JAVA_OPTS=-XX:MaxDirectMemorySize=16g)");
		}
	}
}
