package io.kvferry.transport.netty;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.UnsynchronizedAppenderBase;
import org.slf4j.LoggerFactory;

/**
 * Records the formatted log lines of one logger so a test can wait for a line. Lock-free on the logging side (event
 * loops log; BlockHound watches them); the test thread waits with a bound. Close to detach (and to give the logger back
 * its level, when the recorder set one).
 */
public final class LogRecorder implements AutoCloseable {

	private final Logger logger;
	private final Level level;
	private final boolean additive;
	private final Queue<String> lines = new ConcurrentLinkedQueue<>();
	private final Semaphore arrivals = new Semaphore(0);
	private final UnsynchronizedAppenderBase<ILoggingEvent> appender = new UnsynchronizedAppenderBase<>() {
		@Override
		protected void append(ILoggingEvent event) {
			lines.add(event.getLevel() + " " + event.getFormattedMessage());
			arrivals.release();
		}
	};

	private LogRecorder(Logger logger) {
		this.logger = logger;
		this.level = logger.getLevel();
		this.additive = logger.isAdditive();
		appender.setContext(logger.getLoggerContext());
		appender.setName("kvferry-test-recorder");
		appender.start();
		logger.addAppender(appender);
	}

	/** @return a recorder of the lines {@code type}'s logger writes from now on */
	public static LogRecorder of(Class<?> type) {
		return new LogRecorder((Logger) LoggerFactory.getLogger(type));
	}

	/**
	 * @param category a logger's name
	 * @param level the level the logger gets until the recorder is closed
	 * @return a recorder of the lines that logger writes from now on, which reach no other appender meanwhile
	 */
	public static LogRecorder at(String category, Level level) {
		LogRecorder recorder = new LogRecorder((Logger) LoggerFactory.getLogger(category));
		recorder.logger.setLevel(level);
		recorder.logger.setAdditive(false);
		return recorder;
	}

	/**
	 * Waits for a line matching {@code condition}.
	 *
	 * @return the first such line
	 * @throws AssertionError when none came within {@code timeout}
	 */
	public String await(Predicate<String> condition, Duration timeout) throws InterruptedException {
		long deadline = System.nanoTime() + timeout.toNanos();
		for (;;) {
			for (String line : lines) {
				if (condition.test(line)) {
					return line;
				}
			}
			long left = deadline - System.nanoTime();
			if (left <= 0 || !arrivals.tryAcquire(left, TimeUnit.NANOSECONDS)) {
				throw new AssertionError("no matching log line within " + timeout + "; lines: " + lines());
			}
		}
	}

	/** @return every line so far */
	public List<String> lines() {
		return new ArrayList<>(lines);
	}

	@Override
	public void close() {
		logger.detachAppender(appender);
		appender.stop();
		logger.setLevel(level);
		logger.setAdditive(additive);
	}
}
