package io.kvferry.bootstrap.client;

import java.time.Duration;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedTransferQueue;
import java.util.concurrent.TimeUnit;

import reactor.core.Disposable;
import reactor.core.scheduler.Scheduler;
import reactor.test.scheduler.VirtualTimeScheduler;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A virtual-time scheduler that also hands every delayed task's delay to the test. The client schedules its retry
 * delays from a Netty event loop after an answer arrived over a real socket; {@link #nextDelay()} lets the test wait
 * for that moment before it moves the virtual clock, so no advance can happen before the delay exists.
 */
final class DelayRecordingScheduler implements Scheduler {

	private final VirtualTimeScheduler clock = VirtualTimeScheduler.create();
	// Offered from an event loop: a transfer queue's offer never takes a lock, where a linked blocking queue's waits
	// for the test thread's hold on it (and BlockHound then fails the retry).
	private final BlockingQueue<Duration> delays = new LinkedTransferQueue<>();

	@Override
	public Disposable schedule(Runnable task) {
		return clock.schedule(task);
	}

	@Override
	public Disposable schedule(Runnable task, long delay, TimeUnit unit) {
		// Schedule first, then tell the test: the test must not move the clock before the task's due time is fixed.
		Disposable scheduled = clock.schedule(task, delay, unit);
		delays.add(Duration.ofNanos(unit.toNanos(delay)));
		return scheduled;
	}

	@Override
	public Disposable schedulePeriodically(Runnable task, long initialDelay, long period, TimeUnit unit) {
		return clock.schedulePeriodically(task, initialDelay, period, unit);
	}

	@Override
	public Worker createWorker() {
		return clock.createWorker();
	}

	@Override
	public long now(TimeUnit unit) {
		return clock.now(unit);
	}

	@Override
	public void dispose() {
		clock.dispose();
	}

	/** @return the next delay the client scheduled, waiting for it at most {@link HttpStub#WAIT} */
	Duration nextDelay() {
		try {
			Duration delay = delays.poll(HttpStub.WAIT.toMillis(), TimeUnit.MILLISECONDS);
			assertThat(delay).as("a retry delay scheduled within " + HttpStub.WAIT).isNotNull();
			return delay;
		}
		catch (InterruptedException e) {
			Thread.currentThread().interrupt();
			throw new AssertionError("interrupted", e);
		}
	}

	/** @return whether a delay was scheduled that {@link #nextDelay()} has not taken */
	boolean hasPendingDelay() {
		return !delays.isEmpty();
	}

	/** Moves the virtual clock; tasks that fall due run on the calling thread. */
	void advance(Duration by) {
		clock.advanceTimeBy(by);
	}
}
