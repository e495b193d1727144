package io.kvferry.cli.netns;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;

/**
 * What the tests that run kvferry's roles as processes in network namespaces share: the hosts' names, the model shape
 * every role is started with, and the processes and namespaces a test started, closed after it.
 */
abstract class NetnsRoleTest {

	static final String BOOTSTRAP = "bootstrap";
	static final String PREFILL = "prefill";
	static final String DECODE = "decode";

	// 16 KiB of KV per token: 4 layers, 8 KV heads x 128, bf16; one page of 16 tokens is 256 KiB.
	static final String[] SHAPE = { "--layers", "4", "--kv-heads", "8", "--head-dim", "128", "--page-size", "16" };

	final Tracked tracked = new Tracked();

	@BeforeAll
	static void namespacesCanBeMade() {
		NetnsHosts.assumeAvailable();
	}

	@AfterEach
	void closeAll() throws Exception {
		tracked.close();
	}

	<T extends AutoCloseable> T track(T resource) {
		return tracked.track(resource);
	}

	/** @return {@code parts} followed by the model shape */
	static String[] args(String... parts) {
		List<String> all = new ArrayList<>(List.of(parts));
		all.addAll(List.of(SHAPE));
		return all.toArray(String[]::new);
	}
}
