package io.kvferry.bootstrap.client;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.AppenderBase;
import org.slf4j.LoggerFactory;

/** Collects what one class logs, from any thread, while attached. */
final class LogCapture extends AppenderBase<ILoggingEvent> implements AutoCloseable {

	private final List<ILoggingEvent> events = new CopyOnWriteArrayList<>();
	private final Logger logger;

	private LogCapture(Class<?> source) {
		this.logger = (Logger) LoggerFactory.getLogger(source);
		setName("log-capture-" + source.getSimpleName());
		setContext(logger.getLoggerContext());
		start();
		logger.addAppender(this);
	}

	/** @return a capture attached to {@code source}'s logger */
	static LogCapture of(Class<?> source) {
		return new LogCapture(source);
	}

	@Override
	protected void append(ILoggingEvent event) {
		events.add(event);
	}

	/** @return the formatted messages logged at {@code level} */
	List<String> messages(Level level) {
		return events.stream().filter(e -> e.getLevel() == level).map(ILoggingEvent::getFormattedMessage).toList();
	}

	@Override
	public void close() {
		logger.detachAppender(this);
		stop();
	}
}
