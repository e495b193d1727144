package io.kvferry.transport.netty;

import static io.kvferry.transport.netty.Loopback.TIMEOUT;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Stream;

/** What a test's ring directory holds, and what this process maps or keeps open of it. */
final class RingDir {

	private RingDir() {
	}

	/** @return the files in {@code dir} */
	static List<Path> files(Path dir) throws IOException {
		try (Stream<Path> files = Files.list(dir)) {
			return files.toList();
		}
	}

	/** @return the lines of this process's memory map that map a ring of {@code dir} */
	static List<String> mapped(Path dir) throws IOException {
		try (Stream<String> lines = Files.lines(Path.of("/proc/self/maps"))) {
			return lines.filter(l -> l.contains(dir.toString())).toList();
		}
	}

	/** @return this process's descriptors ({@code /proc/self/fd/N}) of files of {@code dir}, named or unlinked */
	static List<Path> descriptors(Path dir) throws IOException {
		try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
			return fds.filter(fd -> {
				try {
					return Files.readSymbolicLink(fd).toString().startsWith(dir + "/");
				}
				catch (IOException e) {
					// Closed since it was listed.
					return false;
				}
			}).toList();
		}
	}

	/** Waits until {@code dir} is empty (a name goes off the event loop, a moment after what a test awaited). */
	static void awaitNoFiles(Path dir) throws IOException {
		long deadline = System.nanoTime() + TIMEOUT.toNanos();
		while (!files(dir).isEmpty() && System.nanoTime() < deadline) {
			LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
		}
		assertThat(files(dir)).as("ring files left in the directory").isEmpty();
	}

	/** Waits until this process maps no ring of {@code dir} (unmapping runs off the event loop). */
	static void awaitUnmapped(Path dir) throws IOException {
		long deadline = System.nanoTime() + TIMEOUT.toNanos();
		while (!mapped(dir).isEmpty() && System.nanoTime() < deadline) {
			LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
		}
		assertThat(mapped(dir)).as("ring mappings left in this process").isEmpty();
	}
}
