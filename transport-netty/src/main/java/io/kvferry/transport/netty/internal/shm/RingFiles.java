package io.kvferry.transport.netty.internal.shm;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The names of ring files, which must not outlive the offer that made them. A file loses its name as soon as both
 * sides mapped it (the mappings keep the memory): prefill unlinks it right after mapping it, decode when the answer
 * comes, or when none came in time, or when the connection ends; and at the latest when the JVM exits. A process killed
 * before any of that (by {@code kill -9}: no shutdown hook runs) leaves the name behind; the next ring created in that
 * directory, by any process, removes it ({@link #sweep}).
 */
public final class RingFiles {

	private static final Logger log = LoggerFactory.getLogger(RingFiles.class);

	private static final Set<Path> LIVE = ConcurrentHashMap.newKeySet();

	static {
		Runtime.getRuntime().addShutdownHook(new Thread(RingFiles::unlinkAll, "kvferry-shm-cleanup"));
	}

	private RingFiles() {
	}

	/** Remembers a file about to be created. */
	static void created(Path path) {
		LIVE.add(path);
	}

	/** Unlinks a ring file (blocking: off the event loops); failures are logged, never thrown. */
	public static void unlink(Path path) {
		try {
			Files.deleteIfExists(path);
		}
		catch (IOException | RuntimeException e) {
			log.warn("could not remove shared-memory ring {}: {}", path, e.toString());
		}
		LIVE.remove(path);
	}

	/**
	 * Unlinks the ring files in {@code dir} that a process which ended left behind. A creator locks its file as soon
	 * as it exists and writes the header's magic last, and the kernel drops the lock when the process dies: a file
	 * that carries the magic and that no process locks has no creator left. A file without the magic may be in its
	 * first microseconds and is left alone. This JVM's own files are skipped: opening and closing one would drop the
	 * lock this process holds on it. Blocking: off the event loops.
	 */
	static void sweep(Path dir) {
		try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, "kvferry-*")) {
			for (Path file : files) {
				if (!LIVE.contains(file) && Ring.NAME.matcher(file.getFileName().toString()).matches()
						&& unlinkIfLeftOver(file)) {
					log.info("removed shared-memory ring {}, left behind by a process that ended", file);
				}
			}
		}
		catch (IOException | RuntimeException e) {
			log.debug("could not look for left-over shared-memory rings in {}: {}", dir, e.toString());
		}
	}

	private static boolean unlinkIfLeftOver(Path file) {
		try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE,
				LinkOption.NOFOLLOW_LINKS)) {
			FileLock lock = ch.tryLock();
			if (lock == null) {
				return false;
			}
			ByteBuffer magic = ByteBuffer.allocate(Long.BYTES);
			while (magic.hasRemaining() && ch.read(magic, magic.position()) > 0) {
				// A short read goes on where it stopped; the end of the file stops it.
			}
			if (magic.hasRemaining() || magic.getLong(0) != Ring.MAGIC) {
				return false;
			}
			return Files.deleteIfExists(file);
		}
		catch (IOException | OverlappingFileLockException e) {
			// Another user's file, gone meanwhile, or locked in this JVM: not ours to remove.
			return false;
		}
	}

	/** @return how many ring files of this JVM still have a name (for tests) */
	public static int live() {
		return LIVE.size();
	}

	private static void unlinkAll() {
		for (Path p : LIVE) {
			unlink(p);
		}
	}
}
