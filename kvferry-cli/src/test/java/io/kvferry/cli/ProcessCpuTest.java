package io.kvferry.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;

class ProcessCpuTest {

	private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

	@Test
	void aWindowReadsTheCpuOfItsThreadsToTheMicrosecondOnLinux() {
		ProcessCpu window = ProcessCpu.start();
		assertThat(window.precise()).as("per-thread run times from /proc on Linux").isTrue();
		long spun = spin(3_000_000);
		long cpu = window.nanos();
		// At least what this thread ran (the JVM's compiler threads may add theirs): 3 ms, under a clock tick.
		assertThat(cpu).isGreaterThanOrEqualTo(spun);
		assertThat(window.compilerNanos()).as("the JIT compiler's share of it").isBetween(0L, cpu - spun);
	}

	@Test
	void aThreadBornInTheWindowCountsFromItsBirth() throws InterruptedException {
		ProcessCpu window = ProcessCpu.start();
		AtomicLong spun = new AtomicLong();
		CountDownLatch spinning = new CountDownLatch(1);
		CountDownLatch read = new CountDownLatch(1);
		Thread t = new Thread(() -> {
			spun.set(spin(20_000_000));
			spinning.countDown();
			// Alive until the window was read: a thread that ended in the window would lose its share.
			awaitQuietly(read);
		}, "process-cpu-test");
		t.start();
		spinning.await();
		long cpu = window.nanos();
		read.countDown();
		t.join();
		assertThat(cpu).isGreaterThanOrEqualTo(spun.get());
		// Linux keeps a thread's name to 15 characters: "process-cpu-tes".
		assertThat(window.nanosOf("process-cpu")).as("that thread's share, by its name").isBetween(spun.get(), cpu);
	}

	private static void awaitQuietly(CountDownLatch latch) {
		try {
			latch.await();
		}
		catch (InterruptedException e) {
			Thread.currentThread().interrupt();
		}
	}

	/** @return this thread's CPU nanoseconds spent spinning, at least {@code nanos} */
	private static long spin(long nanos) {
		long from = THREADS.getCurrentThreadCpuTime();
		long x = 0;
		long now;
		while ((now = THREADS.getCurrentThreadCpuTime()) - from < nanos) {
			x += now;
		}
		return x == 0 ? 0 : now - from;
	}
}
