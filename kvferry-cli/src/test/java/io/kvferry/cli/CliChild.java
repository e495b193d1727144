package io.kvferry.cli;

import java.io.IOException;
import java.net.URISyntaxException;
import java.util.List;
import java.util.Set;

import io.kvferry.test.Child;

/** {@code kvferry args...} in its own JVM, started from this module's test class path. */
public final class CliChild {

	private CliChild() {
	}

	/** Starts {@code kvferry args...} in a new JVM. */
	public static Child start(String name, String... args) throws IOException, URISyntaxException {
		return Child.startMain(name, KVFerryCli.class, args);
	}

	/**
	 * Starts {@code kvferry args...} in a new JVM run through {@code wrapper} (such as {@code ip netns exec NS}).
	 *
	 * @param unset environment variables the child must not see
	 */
	public static Child start(String name, List<String> wrapper, Set<String> unset, String... args)
			throws IOException, URISyntaxException {
		return Child.start(name, wrapper, unset, KVFerryCli.class, args);
	}
}
