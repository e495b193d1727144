package io.kvferry.benchmarks;

import java.util.Collection;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;
import org.openjdk.jmh.runner.options.VerboseMode;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Runs every benchmark once, in this JVM, for a few milliseconds: that they still compile against the code they
 * measure is the build's job, that they still run (no exception, a score) is this test's. Says nothing about speed.
 */
@Timeout(120)
class BenchmarksSmokeTest {

	// Benchmark methods times their parameter combinations, as declared in the benchmark classes.
	private static final int RUNS = 2 * 2 + 3 * 2 + 4 + 2 + 6 + 2 + 3;

	@Test
	void everyBenchmarkRunsAndScores() throws Exception {
		Options options = new OptionsBuilder()
				.include("io\\.kvferry\\..*Benchmark")
				.forks(0)
				.warmupIterations(0)
				.measurementIterations(1)
				.measurementTime(TimeValue.milliseconds(20))
				.shouldFailOnError(true)
				.verbosity(VerboseMode.SILENT)
				.build();
		Collection<RunResult> results = new Runner(options).run();
		assertThat(results).hasSize(RUNS);
		for (RunResult r : results) {
			assertThat(r.getPrimaryResult().getScore()).as(r.getParams().getBenchmark() + " " + r.getParams())
					.isPositive();
		}
	}
}
