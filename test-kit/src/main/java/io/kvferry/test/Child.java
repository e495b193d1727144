package io.kvferry.test;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A {@code main} in its own JVM, started from the test class path of the test that starts it, with its output captured
 * line by line: a command line role, or an example run as a reader would run it. The child logs with the test class
 * path's {@code logback-test.xml}.
 */
public final class Child implements AutoCloseable {

	private static final Duration POLL = Duration.ofMillis(100);

	private final String name;
	private final Process process;
	private final StringBuffer out = new StringBuffer();
	private final StringBuffer err = new StringBuffer();
	private final BlockingQueue<Line> lines = new LinkedBlockingQueue<>();
	private final Thread outReader;
	private final Thread errReader;

	private Child(String name, Process process) {
		this.name = name;
		this.process = process;
		this.outReader = pump(process.getInputStream(), out, name + "-out");
		this.errReader = pump(process.getErrorStream(), err, name + "-err");
	}

	/** A line of output and when it was read ({@link System#nanoTime()}). */
	private record Line(String text, long nanos) {
	}

	/**
	 * A line that matched.
	 *
	 * @param match the match
	 * @param nanos when the line was read ({@link System#nanoTime()})
	 */
	public record Seen(Matcher match, long nanos) {
	}

	/** Starts {@code mainClass}'s {@code main(args)} in a new JVM. */
	public static Child startMain(String name, Class<?> mainClass, String... args)
			throws IOException, URISyntaxException {
		return start(name, List.of(), Set.of(), List.of(), mainClass, args);
	}

	/**
	 * Starts {@code mainClass}'s {@code main(args)} in a new JVM with {@code jvmOptions} after the defaults (so that,
	 * for instance, {@code -Xmx512m} replaces the default heap).
	 */
	public static Child startMain(String name, List<String> jvmOptions, Class<?> mainClass, String... args)
			throws IOException, URISyntaxException {
		return start(name, List.of(), Set.of(), jvmOptions, mainClass, args);
	}

	/**
	 * Starts {@code mainClass}'s {@code main(args)} in a new JVM run through {@code wrapper} (such as
	 * {@code ip netns exec NS}).
	 *
	 * @param unset environment variables the child must not see
	 */
	public static Child start(String name, List<String> wrapper, Set<String> unset, Class<?> mainClass,
			String... args) throws IOException, URISyntaxException {
		return start(name, wrapper, unset, List.of(), mainClass, args);
	}

	private static Child start(String name, List<String> wrapper, Set<String> unset, List<String> jvmOptions,
			Class<?> mainClass, String... args) throws IOException, URISyntaxException {
		List<String> command = new ArrayList<>(wrapper);
		command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
		// One explicit logback file: with several on the class path logback reports its status on stdout. The
		// module's own test configuration if it has one, else the test kit's.
		URL logback = Child.class.getResource("/logback-test.xml");
		// The test kit's file may sit in its jar: logback also takes a class path resource name.
		command.add("-Dlogback.configurationFile=" + (logback != null ? Path.of(logback.toURI()).toString()
				: "io/kvferry/test/logback-test.xml"));
		command.addAll(List.of("-Xmx256m", "-XX:MaxDirectMemorySize=256m", "-XX:+UseSerialGC",
				"-XX:TieredStopAtLevel=1",
				"--add-opens", "java.base/java.nio=ALL-UNNAMED", "-Dio.netty.tryReflectionSetAccessible=true"));
		command.addAll(jvmOptions);
		command.addAll(List.of("-cp", System.getProperty("java.class.path"), mainClass.getName()));
		command.addAll(List.of(args));
		ProcessBuilder builder = new ProcessBuilder(command);
		builder.environment().keySet().removeAll(unset);
		return new Child(name, builder.start());
	}

	private Thread pump(InputStream in, StringBuffer sink, String threadName) {
		Thread t = new Thread(() -> {
			try (BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
				String line;
				while ((line = r.readLine()) != null) {
					sink.append(line).append('\n');
					lines.add(new Line(line, System.nanoTime()));
				}
			}
			catch (IOException e) {
				sink.append("[stream closed: ").append(e.getMessage()).append("]\n");
			}
		}, threadName);
		t.setDaemon(true);
		t.start();
		return t;
	}

	/**
	 * Waits for a line (stdout or stderr) matching {@code regex}.
	 *
	 * @return the match
	 * @throws AssertionError when none came within {@code timeout} or the process ended first
	 */
	public Matcher awaitLine(String regex, Duration timeout) throws InterruptedException {
		return awaitSeen(regex, timeout).match();
	}

	/**
	 * Waits for a line (stdout or stderr) matching {@code regex}, as {@link #awaitLine}.
	 *
	 * @return the match and when its line was read
	 */
	public Seen awaitSeen(String regex, Duration timeout) throws InterruptedException {
		Pattern p = Pattern.compile(regex);
		long deadline = System.nanoTime() + timeout.toNanos();
		while (true) {
			long left = deadline - System.nanoTime();
			// Short polls so that a process that died is noticed at once, not after the whole timeout.
			Line line = left <= 0 ? null : lines.poll(Math.min(left, POLL.toNanos()), TimeUnit.NANOSECONDS);
			boolean ended = !process.isAlive() && !outReader.isAlive() && !errReader.isAlive() && lines.isEmpty();
			if (line == null && (left <= 0 || ended)) {
				throw new AssertionError(name + ": no line matching /" + regex + "/ within " + timeout + "; "
						+ (process.isAlive() ? "still running" : "exited " + process.exitValue()) + "\n" + output());
			}
			if (line == null) {
				continue;
			}
			Matcher m = p.matcher(line.text());
			if (m.find()) {
				return new Seen(m, line.nanos());
			}
		}
	}

	/**
	 * @return the exit status
	 * @throws AssertionError when it did not exit within {@code timeout}
	 */
	public int awaitExit(Duration timeout) throws InterruptedException {
		if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
			throw new AssertionError(name + " did not exit within " + timeout + "\n" + output());
		}
		// The readers end with the streams; bounded in case a grandchild holds them.
		outReader.join(5_000);
		errReader.join(5_000);
		return process.exitValue();
	}

	/** @return whether the process still runs */
	public boolean isAlive() {
		return process.isAlive();
	}

	public String stdout() {
		return out.toString();
	}

	public String stderr() {
		return err.toString();
	}

	public String output() {
		return "--- " + name + " stdout ---\n" + out + "--- " + name + " stderr ---\n" + err;
	}

	/** Kills the process at once, as a crash would. */
	public void kill() throws InterruptedException {
		process.destroyForcibly();
		process.waitFor(10, TimeUnit.SECONDS);
	}

	/**
	 * Stops the process with SIGSTOP: it runs no more code, and the kernel keeps its sockets open, as a hung process
	 * (a stuck GC, a debugger, a frozen container) would; {@link #resume()} continues it.
	 */
	public void suspend() throws IOException, InterruptedException {
		signal("STOP");
	}

	/** Continues a process {@link #suspend() stopped} before (SIGCONT). */
	public void resume() throws IOException, InterruptedException {
		signal("CONT");
	}

	private void signal(String name) throws IOException, InterruptedException {
		Process kill = new ProcessBuilder("kill", "-" + name, String.valueOf(process.pid())).redirectErrorStream(true)
				.start();
		String out = new String(kill.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
		if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
			throw new IOException("kill -" + name + " " + process.pid() + " failed: " + out);
		}
	}

	/**
	 * Sends SIGTERM, as an orchestrator stopping the process does, without waiting. Through the process handle:
	 * {@link Process#destroy()} also closes the pipes, and the process's last lines would be lost.
	 */
	public void terminate() {
		process.toHandle().destroy();
	}

	/** Stops the process (SIGTERM, then SIGKILL after ten seconds). */
	@Override
	public void close() {
		if (!process.isAlive()) {
			return;
		}
		process.destroy();
		try {
			if (!process.waitFor(10, TimeUnit.SECONDS)) {
				kill();
			}
		}
		catch (InterruptedException e) {
			process.destroyForcibly();
			Thread.currentThread().interrupt();
		}
	}
}
