package io.kvferry.cli;

import java.lang.management.ManagementFactory;

/** The process's CPU time, for the bench's CPU-per-room figures. */
final class ProcessCpu {

	private ProcessCpu() {
	}

	/** @return CPU time of the whole process so far, in nanoseconds (0 when the JVM does not tell) */
	static long nanos() {
		if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os) {
			return Math.max(0, os.getProcessCpuTime());
		}
		return 0;
	}
}
