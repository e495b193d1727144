package io.kvferry.test;

import reactor.blockhound.BlockHound;
import reactor.blockhound.BlockingOperationError;
import reactor.blockhound.integration.BlockHoundIntegration;

/**
 * Tells BlockHound (through {@code META-INF/services}) about waits that are not I/O — locks held for a few
 * instructions, and one idle wait — that its built-in rules do not list yet, and prints the stack of every blocking call it finds (its error alone names only the
 * blocking method, and it often surfaces as a room's failure reason far from where it happened). The waits:
 * <ul>
 * <li>Netty 4.2's adaptive allocator growing its magazine array when several event loops do at once (seen under the
 * fuzz test's concurrent load);</li>
 * <li>a thread pool's main lock when a scheduler such as Reactor's bounded elastic one adds a worker, which an event
 * loop handing file work off the loop can meet while another worker exits (the likely cause of one {@code Unsafe#park}
 * report in a whole-suite run, which the stack printed below will confirm or refute if it recurs);</li>
 * <li>a scheduler's delay queue when a periodic task is cancelled: Reactor's own rules allow it for one-shot tasks
 * only, and a decode connection that closes on its event loop cancels its lease renewals, a periodic task;</li>
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
public final class NettyAllocatorBlockHoundIntegration implements BlockHoundIntegration {

	@Override
	public void applyTo(BlockHound.Builder builder) {
		builder.allowBlockingCallsInside("io.netty.buffer.AdaptivePoolingAllocator$MagazineGroup",
				"tryExpandMagazines");
		builder.allowBlockingCallsInside("java.util.concurrent.ThreadPoolExecutor", "addWorker");
		for (String periodic : new String[] { "PeriodicSchedulerTask", "PeriodicWorkerTask",
				"InstantPeriodicWorkerTask" }) {
			builder.allowBlockingCallsInside("reactor.core.scheduler." + periodic, "dispose");
		}
		builder.allowBlockingCallsInside("io.netty.channel.local.LocalIoHandler", "run");
		builder.allowBlockingCallsInside("reactor.test.scheduler.VirtualTimeScheduler$VirtualTimeWorker", "schedule");
		builder.allowBlockingCallsInside("reactor.test.scheduler.VirtualTimeScheduler$TimedRunnable", "dispose");
		builder.blockingMethodCallback(method -> {
			BlockingOperationError error = new BlockingOperationError(method);
			error.printStackTrace(System.out);
			throw error;
		});
	}
}
