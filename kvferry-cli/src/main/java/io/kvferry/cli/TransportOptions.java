package io.kvferry.cli;

import io.kvferry.transport.netty.IoMode;
import io.kvferry.transport.netty.NettyKVTransport;
import io.kvferry.transport.netty.SameHost;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine;

/** Which data path the command's transports may use: shared memory when the peer is on this host, or TCP only. */
final class TransportOptions {

	static final String SHM = "shm";
	static final String TCP = "tcp";

	@Option(names = "--transport", paramLabel = "shm|tcp", completionCandidates = Kinds.class,
			description = "'shm': KV bytes through shared memory (a ring under /dev/shm) when prefill and decode run on "
					+ "one host, TCP otherwise (the reason is logged); 'tcp': always TCP (default: shm for demo, tcp "
					+ "for prefill and decode; both sides of a connection need shm for it to apply).")
	String kind;

	@Mixin
	IoOptions io;

	/** Checks the option; without one, {@code defaultKind} applies. */
	void validate(CommandLine cl, String defaultKind) {
		if (kind == null) {
			kind = defaultKind;
		}
		if (!SHM.equals(kind) && !TCP.equals(kind)) {
			throw new CommandLine.ParameterException(cl, "--transport : " + kind + " (expected: shm or tcp)");
		}
		io.validate(cl);
	}

	/** @return {@code transport} with the chosen path */
	NettyKVTransport apply(NettyKVTransport transport) {
		return io.apply(transport).sameHost(SHM.equals(kind) ? SameHost.AUTO : SameHost.OFF);
	}

	/** @return what a summary says about the path {@code transport}'s connections took */
	static String describe(NettyKVTransport transport) {
		return transport.sameHostConnections() > 0 ? "shared memory (same host)"
				: transport.ioMode() == IoMode.EPOLL ? "TCP" : "TCP (" + transport.ioMode().label() + ")";
	}

	static final class Kinds extends java.util.ArrayList<String> {
		Kinds() {
			super(java.util.List.of(SHM, TCP));
		}
	}
}
