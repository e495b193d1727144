package io.kvferry.cli;

import java.io.IOException;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvferry.HostPort;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import io.kvferry.harness.ModelShape;
import io.kvferry.spi.KVTransport;

/**
 * One part of {@code kvferry bench} (the bulk room, the many test, page size 1, ...), run on the transports of one row
 * of the table: kvferry's TCP transport, or UCX. Each runs its own baseline in turn with its rounds, so that its ratio
 * to that baseline compares rows measured minutes apart.
 */
@FunctionalInterface
interface BenchScenario {

	/**
	 * The transports and services a scenario runs on.
	 *
	 * @param shape the model's shape
	 * @param prefill prefill's transport
	 * @param decode decode's transport (of its own, as in another process)
	 * @param client the bootstrap client
	 * @param bootstrap a bootstrap server the scenario may register one instance with
	 */
	record Run(ModelShape shape, KVTransport prefill, KVTransport decode, ReactorBootstrapClient client,
			HostPort bootstrap) {
	}

	/** Measures, putting its figures into {@code row} under its own keys. */
	void run(Run run, ObjectNode row) throws IOException;
}
