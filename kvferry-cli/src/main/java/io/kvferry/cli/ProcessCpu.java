package io.kvferry.cli;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * The process's CPU time over a window, for the bench's CPU-per-room figures.
 *
 * <p>Where Linux shows each thread's run time in nanoseconds ({@code /proc/self/task/<tid>/schedstat}), a window is
 * the sum over every thread of the process, the JVM's own included, of what each ran between its two readings; a thread
 * born in the window counts from its birth, and one that ended in it loses its last stretch. Elsewhere it is the JVM's
 * process CPU time, which Linux counts in clock ticks (10 ms): a window of 400 rooms of 100 µs then reads in steps of
 * 25 µs per room, as coarse as the figure it measures.
 */
final class ProcessCpu {

	private static final Path TASKS = Path.of("/proc/self/task");

	// HotSpot names its JIT compiler threads "C1 CompilerThread<n>" and "C2 CompilerThread<n>" (Linux keeps the first
	// 15 characters).
	private static final String COMPILER = "CompilerThre";

	private final Map<String, Long> start;
	private final long startTotal;
	// What each thread ran in the window, by its name, as the last nanos() read it.
	private final Map<String, Long> ran = new HashMap<>();

	private ProcessCpu(Map<String, Long> start, long startTotal) {
		this.start = start;
		this.startTotal = startTotal;
	}

	/** @return a window of the process's CPU time that starts now */
	static ProcessCpu start() {
		Map<String, Long> threads = threads();
		return new ProcessCpu(threads, threads == null ? total() : 0);
	}

	/** @return CPU nanoseconds the process spent since {@link #start()}; also takes what each thread ran of it */
	long nanos() {
		if (start == null) {
			return Math.max(0, total() - startTotal);
		}
		Map<String, Long> now = threads();
		if (now == null) {
			return 0;
		}
		long sum = 0;
		ran.clear();
		for (Map.Entry<String, Long> e : now.entrySet()) {
			long delta = e.getValue() - start.getOrDefault(e.getKey(), 0L);
			sum += delta;
			ran.merge(name(e.getKey()), delta, Long::sum);
		}
		return Math.max(0, sum);
	}

	/**
	 * @return of the CPU the last {@link #nanos()} read, what the JIT compiler's threads ran: code still being
	 *         compiled, which a warm process no longer pays (0 where windows are not {@link #precise()})
	 */
	long compilerNanos() {
		return ran.entrySet().stream().filter(e -> e.getKey().contains(COMPILER)).mapToLong(Map.Entry::getValue)
				.sum();
	}

	/**
	 * @param prefix the start of the threads' names, as Linux keeps them (their first 15 characters)
	 * @return of the CPU the last {@link #nanos()} read, what those threads ran (0 where windows are not
	 *         {@link #precise()})
	 */
	long nanosOf(String prefix) {
		return ran.entrySet().stream().filter(e -> e.getKey().startsWith(prefix)).mapToLong(Map.Entry::getValue)
				.sum();
	}

	private static String name(String tid) {
		try {
			return Files.readString(TASKS.resolve(tid).resolve("comm")).trim();
		}
		catch (IOException ended) {
			return "";
		}
	}

	/** @return whether windows read nanoseconds per thread, rather than the process's clock ticks */
	boolean precise() {
		return start != null;
	}

	/** @return each thread's run time in nanoseconds by thread id, or null when Linux does not show it */
	private static Map<String, Long> threads() {
		Map<String, Long> times = new HashMap<>();
		try (DirectoryStream<Path> tasks = Files.newDirectoryStream(TASKS)) {
			for (Path task : tasks) {
				String stat;
				try {
					stat = Files.readString(task.resolve("schedstat"));
				}
				catch (IOException ended) {
					// The thread ended between the listing and the read: its time is lost either way.
					continue;
				}
				int space = stat.indexOf(' ');
				times.put(task.getFileName().toString(), Long.parseLong(space < 0 ? stat.trim() : stat.substring(0,
						space)));
			}
		}
		catch (IOException | RuntimeException e) {
			return null;
		}
		return times.isEmpty() ? null : times;
	}

	/** @return the JVM's CPU time of the whole process so far, in nanoseconds (0 when it does not tell) */
	private static long total() {
		if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os) {
			return Math.max(0, os.getProcessCpuTime());
		}
		return 0;
	}
}
