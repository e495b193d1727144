package io.kvferry.transport.ucx.internal;

import java.time.Duration;
import java.util.Map;
import java.util.Objects;

import io.kvferry.spi.HandshakeSecret;
import io.kvferry.transport.ucx.UcxDataPath;
import org.jspecify.annotations.Nullable;

/**
 * A UCX transport's settings.
 *
 * @param tls the UCX transports to use ({@code UCX_TLS}: {@code tcp}, {@code posix,cma,self}, {@code rc,ud,sm,self});
 *        empty for UCX's default (its environment, else all)
 * @param netDevices the network devices UCX may use ({@code UCX_NET_DEVICES}: {@code lo}, {@code mlx5_0:1}); empty for
 *        UCX's default
 * @param dataPath how KV bytes move
 * @param heartbeatInterval 10 ms to 10 minutes, announced to each peer: a side sends something at least once per
 *        interval, and closes a connection it heard nothing from for two of the peer's
 * @param handshakeTimeout bound of a connection's handshake, and of a close's wait for the peer's answer
 * @param hostIdentity names this host for the choice of shared memory; empty for the kernel's boot id
 * @param config further UCX context settings, by name without the {@code UCX_} prefix
 * @param secret the secret both sides prove in the handshake before anything of prefill is told, or null for none
 */
public record UcxSettings(String tls, String netDevices, UcxDataPath dataPath, Duration heartbeatInterval,
		Duration handshakeTimeout, String hostIdentity, Map<String, String> config, @Nullable HandshakeSecret secret) {

	/** UCX's defaults, five-second heartbeats, a ten-second handshake, no shared secret. */
	public static final UcxSettings DEFAULT = new UcxSettings("", "", UcxDataPath.AUTO, Duration.ofSeconds(5),
			Duration.ofSeconds(10), "", Map.of(), null);

	public UcxSettings {
		Objects.requireNonNull(tls, "tls");
		Objects.requireNonNull(netDevices, "netDevices");
		Objects.requireNonNull(dataPath, "dataPath");
		Objects.requireNonNull(heartbeatInterval, "heartbeatInterval");
		Objects.requireNonNull(handshakeTimeout, "handshakeTimeout");
		Objects.requireNonNull(hostIdentity, "hostIdentity");
		config = Map.copyOf(config);
		if (heartbeatInterval.toMillis() < Handshake.MIN_HEARTBEAT_MILLIS
				|| heartbeatInterval.toMillis() > Handshake.MAX_HEARTBEAT_MILLIS) {
			throw new IllegalArgumentException("heartbeatInterval : " + heartbeatInterval + " (expected: "
					+ Handshake.MIN_HEARTBEAT_MILLIS + "ms.." + Handshake.MAX_HEARTBEAT_MILLIS / 60_000 + "m)");
		}
		if (handshakeTimeout.toMillis() < 1) {
			throw new IllegalArgumentException("handshakeTimeout : " + handshakeTimeout + " (expected: at least 1 ms)");
		}
	}

	@Override
	public String toString() {
		return "tls=" + (tls.isEmpty() ? "default" : tls) + (netDevices.isEmpty() ? "" : ", netDevices=" + netDevices)
				+ ", dataPath=" + dataPath + ", heartbeat=" + heartbeatInterval
				+ (config.isEmpty() ? "" : ", config=" + config) + (secret == null ? "" : ", sharedSecret");
	}
}
