package io.kvferry.test;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.AppenderBase;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.util.ResourceLeakDetector;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.slf4j.LoggerFactory;
import reactor.test.StepVerifier;

/**
 * Bounds every StepVerifier and fails a test class when Netty's leak detector reported a leaked buffer while it ran. Registered for every test of
 * every module through JUnit's extension autodetection (this class and its service file ship in kvferry-test).
 *
 * <p>Netty reports a leak only when a leaked buffer has been collected and a later allocation polls the detector, so
 * after each class the guard runs the collector and allocates a few buffers before it looks.
 */
public final class LeakGuard implements BeforeAllCallback, AfterAllCallback {

	private static final List<String> LEAKS = new CopyOnWriteArrayList<>();

	static {
		// Every StepVerifier is bounded, even one whose author forgot verify(Duration).
		StepVerifier.setDefaultTimeout(Duration.ofSeconds(60));
		// The build sets -Dio.netty.leakDetection.level=paranoid; without an explicit level, tests still run paranoid.
		if (System.getProperty("io.netty.leakDetection.level") == null) {
			ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.PARANOID);
		}
		Logger detector = (Logger) LoggerFactory.getLogger(ResourceLeakDetector.class);
		AppenderBase<ILoggingEvent> appender = new AppenderBase<>() {
			@Override
			protected void append(ILoggingEvent event) {
				if (event.getLevel().isGreaterOrEqual(Level.ERROR) && event.getFormattedMessage().contains("LEAK")) {
					LEAKS.add(event.getFormattedMessage());
				}
			}
		};
		appender.setName("kvferry-leak-guard");
		appender.setContext(detector.getLoggerContext());
		appender.start();
		detector.addAppender(appender);
	}

	@Override
	public void beforeAll(ExtensionContext context) {
		reset();
	}

	@Override
	public void afterAll(ExtensionContext context) {
		check(context.getDisplayName());
	}

	/** Forgets the leak reports so far, after making the detector report what it found until now. */
	public static void reset() {
		poll();
		LEAKS.clear();
	}

	/**
	 * Fails when Netty reported a leaked buffer since the last {@link #reset} (or check): for tests that JUnit
	 * Jupiter's extensions do not reach, such as jqwik properties.
	 *
	 * @param during names what ran, for the message
	 */
	public static void check(String during) {
		poll();
		if (!LEAKS.isEmpty()) {
			String first = LEAKS.get(0);
			int count = LEAKS.size();
			LEAKS.clear();
			throw new AssertionError(count + " ByteBuf leak report(s) during " + during + ":\n" + first);
		}
	}

	/** Makes the detector look at collected buffers now. */
	public static void poll() {
		for (int round = 0; round < 3; round++) {
			System.gc();
			System.runFinalization();
			for (int i = 0; i < 64; i++) {
				ByteBuf a = PooledByteBufAllocator.DEFAULT.directBuffer(16);
				ByteBuf b = Unpooled.directBuffer(16);
				ByteBuf c = PooledByteBufAllocator.DEFAULT.heapBuffer(16);
				a.release();
				b.release();
				c.release();
			}
		}
	}

	/** @return leak reports seen since the current class started (for tests of the guard itself) */
	public static List<String> reports() {
		return List.copyOf(LEAKS);
	}
}
