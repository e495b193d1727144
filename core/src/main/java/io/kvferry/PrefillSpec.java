package io.kvferry;

import java.time.Duration;
import java.util.Objects;

import io.kvferry.internal.KVManagers;
import reactor.core.publisher.Mono;

/**
 * The spec of a prefill rank's manager. It listens on {@link #bindAddress} and registers {@link #advertiseHost}:port
 * with its bootstrap server, again every {@link #reregisterInterval} so that a restarted bootstrap server learns it
 * back. Made by {@link KVManagerSpec#prefill()}; immutable.
 */
public final class PrefillSpec extends KVManagerSpec<PrefillSpec, PrefillKVManager> {

	PrefillSpec(KVManagerConfig config) {
		super(config);
	}

	@Override
	PrefillSpec with(KVManagerConfig config) {
		return new PrefillSpec(config);
	}

	/** @return a new spec whose manager registers with that bootstrap server (required) */
	public PrefillSpec bootstrapAddress(HostPort address) {
		Objects.requireNonNull(address, "address");
		return edit(d -> d.bootstrapAddress = address);
	}

	/** @return a new spec listening there (default 0.0.0.0:0, any free port) */
	public PrefillSpec bindAddress(HostPort address) {
		Objects.requireNonNull(address, "address");
		return edit(d -> d.bindAddress = address);
	}

	/**
	 * @param host the address decode ranks should dial (containers, NAT); default: the bind host, or the detected
	 *        local address when binding a wildcard
	 * @return a new spec
	 */
	public PrefillSpec advertiseHost(String host) {
		Objects.requireNonNull(host, "host");
		return edit(d -> d.advertiseHost = host);
	}

	/**
	 * @param interval how often the rank registers again after its first registration, so that a restarted bootstrap
	 *        server (which keeps no state) learns the rank again; zero disables; default 10 s
	 * @return a new spec
	 */
	public PrefillSpec reregisterInterval(Duration interval) {
		Objects.requireNonNull(interval, "interval");
		return edit(d -> d.reregisterInterval = interval);
	}

	@Override
	Mono<PrefillKVManager> start(KVManagerConfig config) {
		return KVManagers.prefill(config);
	}

	@Override
	String startingPart() {
		return ": registration with the bootstrap server " + config.bootstrapAddress() + " did not complete";
	}

	@Override
	void validate(KVManagerConfig c) {
		super.validate(c);
		if (c.bootstrapAddress() == null) {
			throw new IllegalStateException("bootstrapAddress : missing (expected: where the prefill rank registers)");
		}
	}
}
