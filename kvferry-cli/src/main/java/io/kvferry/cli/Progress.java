package io.kvferry.cli;

import java.io.PrintWriter;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import io.kvferry.harness.RoomResult;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Schedulers;

/**
 * The progress of a batch on stderr: on a terminal one line rewritten in place five times a second, otherwise a plain
 * line every two seconds when something changed. {@link #record} is thread-safe; {@link #start} and {@link #stop} are
 * called once each by the thread running the batch.
 */
final class Progress {

	private final PrintWriter err;
	private final boolean live;
	private final boolean enabled;
	private final int totalRooms;
	private final long totalBytes;
	private final AtomicInteger rooms = new AtomicInteger();
	private final AtomicInteger failures = new AtomicInteger();
	private final AtomicLong bytes = new AtomicLong();
	private volatile long start;
	private volatile String lastCounts = "";
	private Disposable ticker;
	private int width;

	/**
	 * @param err where to write
	 * @param live rewrite one line with carriage returns (a terminal) rather than printing lines
	 * @param enabled whether to print anything (a quiet progress still counts)
	 * @param totalRooms rooms of the batch
	 * @param totalBytes KV bytes the batch moves when every room succeeds
	 */
	Progress(PrintWriter err, boolean live, boolean enabled, int totalRooms, long totalBytes) {
		this.err = err;
		this.live = live;
		this.enabled = enabled;
		this.totalRooms = totalRooms;
		this.totalBytes = totalBytes;
	}

	/** @return a progress that writes live updates when the JVM has a console, plain lines otherwise */
	static Progress forConsole(PrintWriter err, boolean enabled, int totalRooms, long totalBytes) {
		return new Progress(err, System.console() != null, enabled, totalRooms, totalBytes);
	}

	/** Counts one finished room. */
	void record(RoomResult r) {
		rooms.incrementAndGet();
		if (r.ok()) {
			bytes.addAndGet(r.bytes());
		}
		else {
			failures.incrementAndGet();
		}
	}

	/** Starts the periodic updates. */
	void start() {
		start = System.nanoTime();
		if (enabled) {
			ticker = Flux.interval(live ? Duration.ofMillis(200) : Duration.ofSeconds(2), Schedulers.parallel())
					.subscribe(t -> print(false));
		}
	}

	/** Stops the updates and writes the final state. */
	void stop() {
		if (ticker != null) {
			ticker.dispose();
		}
		if (enabled) {
			print(true);
		}
	}

	/** @return the current progress line */
	String line() {
		double seconds = (System.nanoTime() - start) / 1e9;
		long b = bytes.get();
		int done = rooms.get();
		return String.format(Locale.ROOT, "[%3d%%] %d/%d rooms  %s of %s  %.2f GB/s  %d failed  %.1f s",
				totalRooms == 0 ? 100 : done * 100 / totalRooms, done, totalRooms, Sizes.bytes(b),
				Sizes.bytes(totalBytes), seconds <= 0 ? 0 : b / seconds / 1e9, failures.get(), seconds);
	}

	private synchronized void print(boolean last) {
		String line = line();
		if (live) {
			// Pad over the previous, possibly longer, line.
			String padded = line + " ".repeat(Math.max(0, width - line.length()));
			width = line.length();
			err.print("\r" + padded + (last ? "\n" : ""));
			err.flush();
			return;
		}
		String counts = rooms.get() + "/" + failures.get();
		if (last || !counts.equals(lastCounts)) {
			lastCounts = counts;
			err.println(line);
			err.flush();
		}
	}
}
