package io.kvferry.cli;

import java.time.Duration;

import io.kvferry.KVManagerSpec;
import io.kvferry.transport.netty.NettyKVTransport;
import picocli.CommandLine;
import picocli.CommandLine.Option;

/**
 * Heartbeats and per-state timeouts, so that no role waits forever: a dead or silent peer fails its rooms within two
 * heartbeat intervals, and every room state has a bound. Durations read as {@code 500ms}, {@code 1s}, {@code 5m}.
 */
final class TimeoutOptions {

	@Option(names = "--heartbeat-interval", defaultValue = "5s", paramLabel = "DURATION",
			description = "Heartbeat interval of every connection; a peer silent for two intervals is dropped and its "
					+ "rooms fail (default: ${DEFAULT-VALUE}).")
	Duration heartbeatInterval;

	@Option(names = "--bootstrap-timeout", defaultValue = "60s", paramLabel = "DURATION",
			description = "Bound of a room's Bootstrapping state: finding and connecting to its peers "
					+ "(default: ${DEFAULT-VALUE}; 0 disables).")
	Duration bootstrapTimeout;

	@Option(names = "--waiting-timeout", defaultValue = "60s", paramLabel = "DURATION",
			description = "Bound of a room's WaitingForInput state: waiting for the other side to start "
					+ "(default: ${DEFAULT-VALUE}; 0 disables).")
	Duration waitingTimeout;

	@Option(names = "--transfer-timeout", defaultValue = "60s", paramLabel = "DURATION",
			description = "Bound of a room's Transferring state (default: ${DEFAULT-VALUE}; 0 disables).")
	Duration transferTimeout;

	/** @throws CommandLine.ParameterException when the heartbeat interval is out of the bounds peers accept */
	void validate(CommandLine cl) {
		if (heartbeatInterval.compareTo(NettyKVTransport.MIN_HEARTBEAT_INTERVAL) < 0
				|| heartbeatInterval.compareTo(NettyKVTransport.MAX_HEARTBEAT_INTERVAL) > 0) {
			throw new CommandLine.ParameterException(cl, "--heartbeat-interval : " + heartbeatInterval
					+ " (expected: " + NettyKVTransport.MIN_HEARTBEAT_INTERVAL.toMillis() + "ms.."
					+ NettyKVTransport.MAX_HEARTBEAT_INTERVAL.toMinutes() + "m)");
		}
	}

	/** @return the spec with these timeouts */
	KVManagerSpec apply(KVManagerSpec spec) {
		return spec.bootstrapTimeout(bootstrapTimeout).waitingTimeout(waitingTimeout).transferTimeout(transferTimeout);
	}

}
