package io.kvferry.internal;

import java.util.concurrent.TimeUnit;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;
import reactor.core.Disposable;
import reactor.core.scheduler.Schedulers;

/**
 * The managers' hot event streams: one emission with no subscriber (the common case: nothing listens), and with one
 * subscriber called on the emitting thread (its buffer and hand-off, without a thread switch to measure).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class HotStreamBenchmark {

	@Param({ "0", "1" })
	public int subscribers;

	private HotStream<Object> stream;
	private Disposable subscription;
	// One item over and over: the stream is measured, not the allocation of events.
	private final Object item = new Object();

	@Setup(Level.Trial)
	public void setUp(Blackhole sink) {
		stream = new HotStream<>(Schedulers.immediate(), 1024, dropped -> { });
		if (subscribers > 0) {
			subscription = stream.flux().subscribe(sink::consume);
		}
	}

	@TearDown(Level.Trial)
	public void tearDown() {
		if (subscription != null) {
			subscription.dispose();
		}
	}

	@Benchmark
	public void emit() {
		stream.emit(item);
	}
}
