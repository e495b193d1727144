package io.kvferry.cli.netns;

import java.util.ArrayList;
import java.util.List;

/**
 * What a namespace test started: processes and the namespaces they run in, closed newest first (the processes before
 * their namespaces), every one of them even when an earlier one failed to close.
 */
final class Tracked implements AutoCloseable {

	private final List<AutoCloseable> resources = new ArrayList<>();

	/** @return {@code resource}, closed by {@link #close()} */
	<T extends AutoCloseable> T track(T resource) {
		resources.add(resource);
		return resource;
	}

	/** @return what was tracked last */
	AutoCloseable newest() {
		return resources.get(resources.size() - 1);
	}

	@Override
	public void close() throws Exception {
		Exception failure = null;
		for (int i = resources.size() - 1; i >= 0; i--) {
			try {
				resources.get(i).close();
			}
			catch (Exception e) {
				if (failure == null) {
					failure = e;
				}
				else {
					failure.addSuppressed(e);
				}
			}
		}
		resources.clear();
		if (failure != null) {
			throw failure;
		}
	}
}
