package io.kvferry.registry.etcd;

import java.io.IOException;
import java.time.Duration;

import io.kvferry.HostPort;
import io.kvferry.ParallelLayout;
import io.kvferry.bootstrap.PrefillRegistration;

/**
 * A prefill rank in a process of its own, for tests that kill it: registers one rank with etcd, prints
 * {@value #READY}, and keeps its lease alive until its standard input ends (the test killed it or went away).
 *
 * <p>Arguments: etcd endpoints, key prefix, instance (bootstrap address), lease TTL in seconds, rank port.
 */
public final class PrefillRankProcess {

	static final String READY = "REGISTERED";

	private PrefillRankProcess() {
	}

	public static void main(String[] args) throws IOException {
		EtcdBootstrapClient registry = EtcdBootstrapClient.create(args[0]).prefix(args[1])
				.leaseTtl(Duration.ofSeconds(Long.parseLong(args[3]))).timeout(Duration.ofSeconds(20));
		registry.register(HostPort.parse(args[2]),
				PrefillRegistration.prefill(ParallelLayout.SINGLE, "127.0.0.1", Integer.parseInt(args[4]), 16))
				.block(Duration.ofSeconds(30));
		System.out.println(READY);
		System.out.flush();
		while (System.in.read() >= 0) {
			// Lives as long as its parent holds the pipe open.
		}
		registry.dispose();
		System.exit(0);
	}
}
