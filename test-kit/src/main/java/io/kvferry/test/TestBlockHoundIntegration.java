package io.kvferry.test;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;

import reactor.blockhound.BlockHound;
import reactor.blockhound.BlockingOperationError;
import reactor.blockhound.integration.BlockHoundIntegration;

/**
 * Tells BlockHound (through {@code META-INF/services}) about waits that are not I/O — locks held for a few
 * instructions, and one idle wait — that its built-in rules do not list yet, and prints the stack of every blocking
 * call it finds (its error alone names only the blocking method, and it often surfaces as a room's failure reason far
 * from where it happened); the stacks are also written to {@code target/blockhound-reports-<pid>.txt} when the JVM
 * exits. The waits:
 * <ul>
 * <li>Netty 4.2's adaptive allocator growing its magazine array when several event loops do at once (seen under the
 * fuzz test's concurrent load);</li>
 * <li>a thread pool's main lock when a scheduler such as Reactor's bounded elastic one adds a worker, which an event
 * loop handing file work off the loop can meet while another worker exits;</li>
 * <li>a scheduler's delay queue when a task is taken back from a pool that shut down meanwhile, and when a periodic
 * task is cancelled: Reactor's own rules allow that lock for queueing and for cancelling one-shot tasks only, and a
 * decode connection that closes on its event loop cancels its lease renewals, a periodic task;</li>
 * <li>a virtual-time scheduler's task queue, when a client on an event loop schedules (or cancels) its retry delays
 * on a test's virtual clock while the test thread moves that clock;</li>
 * <li>not a lock: Netty's in-JVM transport waits for work by parking its event loop, its equivalent of
 * {@code epoll_wait}, which Netty's own rules do not list.</li>
 * </ul>
 * Without them the affected connection or room is torn down by BlockHound's error, and worse: the error is thrown
 * from inside the lock's wait, which leaves the JDK lock with a waiter that never comes back, so every later user of
 * that lock waits for ever. When the lock was a timer thread's queue, rooms whose timers or hand-offs fell on that
 * thread stopped without a trace and whole test classes waited out their timeouts. Shipped in kvferry-test so every
 * module's tests get it.
 */
public final class TestBlockHoundIntegration implements BlockHoundIntegration {

	@Override
	public void applyTo(BlockHound.Builder builder) {
		builder.allowBlockingCallsInside("io.netty.buffer.AdaptivePoolingAllocator$MagazineGroup",
				"tryExpandMagazines");
		builder.allowBlockingCallsInside("java.util.concurrent.ThreadPoolExecutor", "addWorker");
		for (String periodic : new String[] { "PeriodicSchedulerTask", "PeriodicWorkerTask",
				"InstantPeriodicWorkerTask" }) {
			builder.allowBlockingCallsInside("reactor.core.scheduler." + periodic, "dispose");
		}
		// Takes back a task queued on a pool that shut down meanwhile (a bounded elastic worker evicted while an
		// event loop handed it work): the same queue lock as the queueing Reactor's rules allow.
		builder.allowBlockingCallsInside("java.util.concurrent.ScheduledThreadPoolExecutor", "delayedExecute");
		builder.allowBlockingCallsInside("io.netty.channel.local.LocalIoHandler", "run");
		builder.allowBlockingCallsInside("reactor.test.scheduler.VirtualTimeScheduler$VirtualTimeWorker", "schedule");
		builder.allowBlockingCallsInside("reactor.test.scheduler.VirtualTimeScheduler$TimedRunnable", "dispose");
		builder.blockingMethodCallback(method -> {
			BlockingOperationError error = new BlockingOperationError(method);
			error.printStackTrace(System.out);
			StringWriter stack = new StringWriter();
			error.printStackTrace(new PrintWriter(stack));
			REPORTS.add(stack.toString());
			throw error;
		});
		Runtime.getRuntime().addShutdownHook(new Thread(TestBlockHoundIntegration::writeReports,
				"blockhound-reports"));
	}

	// Surefire files a thread's output under whichever test it counts the thread to, and an event loop's often goes
	// nowhere: the stacks are also written to a file of the module's target directory when the JVM exits.
	private static final Queue<String> REPORTS = new ConcurrentLinkedQueue<>();

	private static void writeReports() {
		if (REPORTS.isEmpty()) {
			return;
		}
		try {
			Path dir = Path.of("target");
			Files.write((Files.isDirectory(dir) ? dir : Path.of(".")).resolve("blockhound-reports-"
					+ ProcessHandle.current().pid() + ".txt"), REPORTS);
		}
		catch (IOException e) {
			// The stacks were printed to the test output already.
		}
	}
}
