package io.kvferry.internal;

import java.util.Queue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;

import io.kvferry.DisaggregationMode;
import io.kvferry.FailureCause;
import io.kvferry.KVPoll;
import io.kvferry.RoomPath;
import io.kvferry.RoomPhases;
import io.kvferry.RoomTrace;
import io.kvferry.RoomTracer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.scheduler.Scheduler;
import reactor.util.concurrent.Queues;

/**
 * Runs a tracing integration's code off the engine's threads and outside its locks: the engine records each step where
 * it happens (often under a room's monitor, on an event loop), with its time; the integration gets the steps in order,
 * one room at a time, on a worker of the callback scheduler. Without tracing ({@link RoomTracer#NONE}) nothing is
 * wrapped and nothing allocated.
 */
final class DeferredRoomTracer {

	private static final Logger log = LoggerFactory.getLogger(DeferredRoomTracer.class);

	private final RoomTracer tracer;
	private final Scheduler callbacks;

	private DeferredRoomTracer(RoomTracer tracer, Scheduler callbacks) {
		this.tracer = tracer;
		this.callbacks = callbacks;
	}

	/** @return the deferring form of {@code tracer}, or {@code null} for {@link RoomTracer#NONE} */
	static DeferredRoomTracer of(RoomTracer tracer, Scheduler callbacks) {
		return tracer == RoomTracer.NONE ? null : new DeferredRoomTracer(tracer, callbacks);
	}

	/**
	 * Starts a trace on the calling thread, so that its context is known at once (decode sends it with the room), and
	 * reads that context there too: the room's requests may go out later on a transport thread, which must not run the
	 * integration's code. For callers that hold no library lock.
	 */
	RoomTrace startNow(DisaggregationMode side, String manager, long room, String parentContext, long startEpochNanos) {
		Trace trace = new Trace();
		RoomTrace target = started(side, manager, room, parentContext, startEpochNanos);
		trace.target = target;
		try {
			String context = target.context();
			trace.context = context == null ? "" : context;
		}
		catch (RuntimeException e) {
			log.warn("[{}] the room tracer failed to give room {}'s context; it goes out without one", manager, room, e);
		}
		return trace;
	}

	/** Starts a trace on the callback scheduler, before its first step; its context is empty. Any caller. */
	RoomTrace startLater(DisaggregationMode side, String manager, long room, String parentContext,
			long startEpochNanos) {
		Trace trace = new Trace();
		trace.submit(() -> trace.target = started(side, manager, room, parentContext, startEpochNanos));
		return trace;
	}

	private RoomTrace started(DisaggregationMode side, String manager, long room, String parentContext,
			long startEpochNanos) {
		try {
			RoomTrace t = tracer.start(side, manager, room, parentContext, startEpochNanos);
			return t == null ? RoomTrace.NONE : t;
		}
		catch (RuntimeException e) {
			log.warn("[{}] the room tracer failed to start room {}; the room is not traced", manager, room, e);
			return RoomTrace.NONE;
		}
	}

	/** A room's trace: steps queue here and are handed on in order by whichever submitter finds the queue idle. */
	private final class Trace implements RoomTrace, Runnable {

		private final Queue<Runnable> steps = Queues.<Runnable>unboundedMultiproducer().get();
		private final AtomicInteger wip = new AtomicInteger();
		// Written by the first step (or before the trace is shared), read by the later ones on the same worker.
		private volatile RoomTrace target = RoomTrace.NONE;
		// Read from the integration where the trace started, or empty for a trace started later.
		private volatile String context = "";

		@Override
		public String context() {
			return context;
		}

		@Override
		public void event(Event event, long value) {
			long at = epochNanos();
			submit(() -> target.event(event, value, at));
		}

		@Override
		public void travelled(RoomPath path, RoomPhases phases) {
			submit(() -> target.travelled(path, phases));
		}

		@Override
		public void end(KVPoll outcome, FailureCause cause, String reason) {
			long at = epochNanos();
			submit(() -> target.end(outcome, cause, reason, at));
		}

		void submit(Runnable step) {
			steps.offer(step);
			if (wip.getAndIncrement() == 0) {
				try {
					callbacks.schedule(this);
				}
				catch (RejectedExecutionException e) {
					// The callback scheduler is gone with its manager: nothing more is traced.
					log.debug("room trace step dropped: the callback scheduler is disposed");
				}
			}
		}

		@Override
		public void run() {
			int missed = 1;
			do {
				Runnable step;
				while ((step = steps.poll()) != null) {
					try {
						step.run();
					}
					catch (RuntimeException e) {
						log.warn("the room tracer failed; this step is not traced", e);
					}
				}
				missed = wip.addAndGet(-missed);
			}
			while (missed != 0);
		}
	}

	/** @return now, in nanoseconds since the epoch, for a trace's start (millisecond precision, no allocation) */
	static long epochNanos() {
		return System.currentTimeMillis() * 1_000_000L;
	}
}
