package io.kvferry.bootstrap.client;

import io.kvferry.HostPort;
import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A real bootstrap server on a free loopback port and an HTTP client for it, for one test: started by {@link #start()},
 * both disposed after the test.
 */
final class LocalBootstrap implements AfterEachCallback {

	private DisposableBootstrapServer server;
	private ReactorBootstrapClient client;

	/** @return the server's address */
	HostPort start() {
		server = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		client = ReactorBootstrapClient.create();
		return server.address();
	}

	ReactorBootstrapClient client() {
		return client;
	}

	@Override
	public void afterEach(ExtensionContext context) {
		if (client != null) {
			client.dispose();
		}
		if (server != null) {
			server.disposeNow();
		}
	}
}
