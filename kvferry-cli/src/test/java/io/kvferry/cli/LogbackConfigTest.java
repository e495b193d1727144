package io.kvferry.cli;

import java.net.URL;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.joran.JoranConfigurator;
import ch.qos.logback.core.ConsoleAppender;
import ch.qos.logback.core.status.Status;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** The CLI's shipped logging configuration: parses cleanly, WARN by default, everything to stderr. */
class LogbackConfigTest {

	@Test
	void theShippedConfigurationLogsWarningsToStderrOnly() throws Exception {
		URL config = KVFerryCli.class.getResource("/logback.xml");
		assertThat(config).isNotNull();
		LoggerContext context = new LoggerContext();
		JoranConfigurator configurator = new JoranConfigurator();
		configurator.setContext(context);
		configurator.doConfigure(config);
		assertThat(context.getStatusManager().getCopyOfStatusList())
				.noneMatch(s -> s.getLevel() >= Status.WARN);
		Logger root = context.getLogger(Logger.ROOT_LOGGER_NAME);
		assertThat(root.getLevel()).isEqualTo(Level.WARN);
		assertThat(root.iteratorForAppenders()).toIterable().singleElement().satisfies(a -> {
			assertThat(a).isInstanceOf(ConsoleAppender.class);
			assertThat(((ConsoleAppender<?>) a).getTarget()).isEqualTo("System.err");
		});
		context.stop();
	}
}
