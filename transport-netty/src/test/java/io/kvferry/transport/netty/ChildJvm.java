package io.kvferry.transport.netty;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A {@code main} of the test class path in a JVM of its own, its output (stdout and stderr merged) kept for failure
 * messages, for tests that need a real process to kill.
 */
final class ChildJvm implements AutoCloseable {

	private final Process process;
	private final StringBuffer output = new StringBuffer();

	private ChildJvm(Process process) {
		this.process = process;
		Thread reader = new Thread(() -> {
			try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(),
					StandardCharsets.UTF_8))) {
				String line;
				while ((line = r.readLine()) != null) {
					output.append(line).append('\n');
				}
			}
			catch (IOException e) {
				output.append("[output closed: ").append(e.getMessage()).append("]\n");
			}
		}, "child-jvm-output");
		reader.setDaemon(true);
		reader.start();
	}

	/** Starts {@code mainClass}'s {@code main(args)} in a new JVM with this one's class path and test logging. */
	static ChildJvm start(Class<?> mainClass, String... args) throws IOException {
		List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java")
				.toString(), "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
				"-Dlogback.configurationFile=io/kvferry/test/logback-test.xml",
				"-cp", System.getProperty("java.class.path"), mainClass.getName()));
		command.addAll(List.of(args));
		return new ChildJvm(new ProcessBuilder(command).redirectErrorStream(true).start());
	}

	/** @return what it wrote so far, for failure messages */
	String output() {
		return output.toString();
	}

	/** Kills the process as {@code kill -9} does (no shutdown hook runs) and waits until it is gone. */
	void kill() throws InterruptedException {
		process.destroyForcibly();
		if (!process.waitFor(Loopback.TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
			throw new AssertionError("the child JVM outlived SIGKILL by " + Loopback.TIMEOUT);
		}
	}

	@Override
	public void close() throws InterruptedException {
		if (process.isAlive()) {
			kill();
		}
	}
}
