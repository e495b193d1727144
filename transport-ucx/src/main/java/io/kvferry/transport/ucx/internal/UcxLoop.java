package io.kvferry.transport.ucx.internal;

import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import org.openucx.jucx.ucp.UcpContext;
import org.openucx.jucx.ucp.UcpWorker;
import org.openucx.jucx.ucp.UcpWorkerParams;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One UCX worker and the thread that owns it: every UCX call of a transport runs here, so the worker needs no locks
 * (UCX's single-thread mode). Other threads hand work over with {@link #execute}, which wakes the thread from
 * {@code ucp_worker_wait}. The thread spins on progress for a while before it sleeps, so that a completion that follows
 * a send closely costs no wake-up.
 */
final class UcxLoop implements Runnable {

	private static final Logger log = LoggerFactory.getLogger(UcxLoop.class);
	/** Empty progress passes before the thread sleeps in {@code ucp_worker_wait}. */
	private static final int SPINS = 2000;

	final UcpWorker worker;
	private final Thread thread;
	private final Queue<Runnable> tasks = new ConcurrentLinkedQueue<>();
	private final CountDownLatch stopped = new CountDownLatch(1);
	private volatile boolean running = true;
	private boolean leak;
	private volatile Runnable onStop = () -> {
	};
	// Once stopped: whether what the last closes asked of UCX (endpoints closing) has completed.
	private volatile BooleanSupplier settled = () -> true;
	private volatile long settleNanos;
	/**
	 * Held while another thread signals the worker and while the worker closes: a timer's or a caller's task handed
	 * over as the loop ends would otherwise signal a worker already freed.
	 */
	private final Object signalling = new Object();
	private boolean workerClosed;

	UcxLoop(UcpContext context, String name) {
		this.worker = context.newWorker(new UcpWorkerParams());
		this.thread = new Thread(this, name);
		thread.setDaemon(true);
	}

	void start() {
		thread.start();
	}

	/** @return whether the caller runs on this loop's thread */
	boolean inLoop() {
		return Thread.currentThread() == thread;
	}

	/** Runs {@code task} on the loop's thread, after what was handed over before; dropped once the loop stopped. */
	void execute(Runnable task) {
		tasks.offer(task);
		if (!inLoop()) {
			signal();
		}
	}

	private void signal() {
		synchronized (signalling) {
			if (!workerClosed) {
				worker.signal();
			}
		}
	}

	/**
	 * Stops the loop after the tasks handed over before, runs {@code last} on its thread (closing what uses the
	 * worker), then closes the worker.
	 */
	void stop(Runnable last, BooleanSupplier settled, long settleNanos) {
		this.onStop = last;
		this.settled = settled;
		this.settleNanos = settleNanos;
		running = false;
		signal();
	}

	/** @return whether the worker was left open because endpoints did not finish closing (its context must stay too) */
	boolean leaked() {
		return leak;
	}

	/** Waits, at most {@code timeoutMillis}, for the loop's thread to end. */
	boolean awaitStopped(long timeoutMillis) throws InterruptedException {
		return stopped.await(timeoutMillis, TimeUnit.MILLISECONDS);
	}

	@Override
	public void run() {
		try {
			int idle = 0;
			while (running) {
				boolean worked = runTasks();
				if (progress() != 0) {
					worked = true;
				}
				if (worked) {
					idle = 0;
				}
				else if (++idle > SPINS && tasks.isEmpty()) {
					// A task handed over after this look signals the worker, which makes the wait return at once.
					worker.waitForEvents();
					idle = 0;
				}
			}
			runTasks();
			onStop.run();
			// What the last closes asked (endpoints closing) completes on progress; UCX must not destroy a worker
			// whose endpoints are still closing.
			long deadline = System.nanoTime() + settleNanos;
			while (!settled.getAsBoolean()) {
				if (System.nanoTime() > deadline) {
					log.warn("UCX endpoints of {} did not finish closing: the worker is left open", thread.getName());
					leak = true;
					return;
				}
				runTasks();
				progress();
				Thread.onSpinWait();
			}
		}
		catch (Throwable e) {
			log.error("UCX progress thread {} failed: {}", thread.getName(), e.toString(), e);
		}
		finally {
			try {
				synchronized (signalling) {
					workerClosed = true;
					if (!leak) {
						worker.close();
					}
				}
			}
			catch (RuntimeException e) {
				log.warn("closing UCX worker of {}: {}", thread.getName(), e.toString());
			}
			stopped.countDown();
		}
	}

	private int progress() {
		try {
			return worker.progress();
		}
		catch (Exception e) {
			throw new IllegalStateException("ucp_worker_progress failed: " + e, e);
		}
	}

	private boolean runTasks() {
		boolean ran = false;
		Runnable t;
		while ((t = tasks.poll()) != null) {
			ran = true;
			try {
				t.run();
			}
			catch (RuntimeException e) {
				log.warn("task on UCX thread {} failed: {}", thread.getName(), e.toString(), e);
			}
		}
		return ran;
	}

	@Override
	public String toString() {
		return thread.getName();
	}
}
