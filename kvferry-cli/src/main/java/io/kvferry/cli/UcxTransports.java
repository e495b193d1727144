package io.kvferry.cli;

import java.time.Duration;
import java.util.Locale;

import io.kvferry.KVFerryException;
import io.kvferry.spi.KVTransport;
import io.kvferry.transport.ucx.Ucx;
import io.kvferry.transport.ucx.UcxKVTransport;
import io.kvferry.transport.ucx.UcxStats;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * UCX, through JUCX: decode reads KV bytes one-sided from prefill's registered pages where the UCX transports both
 * ranks allow do RMA natively (shared memory on one host, InfiniBand or RoCE verbs between hosts), and they travel in
 * active messages where UCX only emulates RMA (TCP).
 *
 * @param tls the UCX transports to use, as {@code UCX_TLS} names them; empty for UCX's own choice
 */
record UcxTransports(String tls) implements TransportKind {

	private static final Logger log = LoggerFactory.getLogger(UcxTransports.class);
	private static final Duration STOP_TIMEOUT = Duration.ofSeconds(10);

	/** What the demo and the bench use by default: both ranks run on this host, and shared memory does RMA natively. */
	static final String SHARED_MEMORY = "posix,cma,self";

	/** @return why UCX cannot run here, naming the missing library and the fix, or null when it can */
	static String unavailable() {
		return Ucx.unavailabilityReason();
	}

	@Override
	public UcxKVTransport create(Duration heartbeat) {
		return UcxKVTransport.create().tls(tls).heartbeatInterval(heartbeat);
	}

	@Override
	public String banner() {
		return "UCX, UCX_TLS=" + (tls.isEmpty() ? "UCX's own choice (the environment's UCX_TLS, else all it finds)"
				: tls) + ": decode reads one-sided where these do RMA natively (shared memory, verbs), active "
				+ "messages elsewhere (tcp)";
	}

	@Override
	public String describe(KVTransport transport) {
		UcxStats s = ((UcxKVTransport) transport).stats();
		String tlsText = tls.isEmpty() ? "UCX's default transports" : "UCX_TLS=" + tls;
		if (s.bytesRead() > 0 && s.bytesInMessages() > 0) {
			return String.format(Locale.ROOT, "UCX (%s): one-sided reads (%s) and active messages (%s)", tlsText,
					Sizes.bytes(s.bytesRead()), Sizes.bytes(s.bytesInMessages()));
		}
		if (s.bytesRead() > 0) {
			return String.format(Locale.ROOT, "UCX (%s): one-sided reads, %s in %,d gets", tlsText,
					Sizes.bytes(s.bytesRead()), s.reads());
		}
		return String.format(Locale.ROOT, "UCX (%s): active messages, %s in %,d messages", tlsText,
				Sizes.bytes(s.bytesInMessages()), s.messages());
	}

	@Override
	public void dispose(KVTransport transport) {
		try {
			// Endpoints closed and memory deregistered before the JVM exits, as far as the peers let it.
			((UcxKVTransport) transport).disposeNow(STOP_TIMEOUT);
		}
		catch (KVFerryException e) {
			log.warn("{}", e.getMessage());
		}
	}
}
