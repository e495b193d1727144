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
					synchronized (output) {
						output.append(line).append('\n');
						output.notifyAll();
					}
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
		return start("128m", mainClass, args);
	}

	/** Starts {@code mainClass}'s {@code main(args)} as {@link #start(Class, String...)} does, with a heap of {@code heap}. */
	static ChildJvm start(String heap, Class<?> mainClass, String... args) throws IOException {
		List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java")
				.toString(), "-Xmx" + heap, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
				"-Dlogback.configurationFile=io/kvferry/test/logback-test.xml",
				"-cp", System.getProperty("java.class.path"), mainClass.getName()));
		command.addAll(List.of(args));
		return new ChildJvm(new ProcessBuilder(command).redirectErrorStream(true).start());
	}

	/**
	 * Waits for a line of output that starts with {@code prefix}.
	 *
	 * @return the rest of that line
	 * @throws AssertionError when no such line came within {@code timeout} or the process ended first
	 */
	String awaitLine(String prefix, java.time.Duration timeout) throws InterruptedException {
		long deadline = System.nanoTime() + timeout.toNanos();
		synchronized (output) {
			while (true) {
				for (String line : output.toString().split("\n")) {
					if (line.startsWith(prefix)) {
						return line.substring(prefix.length());
					}
				}
				long left = deadline - System.nanoTime();
				if (left <= 0 || !process.isAlive()) {
					throw new AssertionError("no line starting '" + prefix + "' within " + timeout + "; the child said:\n"
							+ output);
				}
				TimeUnit.NANOSECONDS.timedWait(output, Math.min(left, TimeUnit.MILLISECONDS.toNanos(100)));
			}
		}
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
