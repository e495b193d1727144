package io.kvferry.transport.netty.internal.shm;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The ring files this JVM created and has not unlinked yet. A file is unlinked as soon as both sides mapped it (the
 * mappings keep the memory), when its connection ends, and at the latest when the JVM exits, even after failures.
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
