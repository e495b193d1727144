package io.kvferry.cli;

import io.kvferry.transport.netty.IoMode;
import io.kvferry.transport.netty.NettyKVTransport;
import picocli.CommandLine.Option;
import picocli.CommandLine;

/** {@code --io}: how the KV transports' event loops do socket I/O. */
final class IoOptions {

	@Option(names = "--io", defaultValue = "epoll", paramLabel = "epoll|io_uring|nio", completionCandidates = Modes.class,
			description = "Socket I/O of the KV transports: epoll (default), io_uring (Linux 5.14+ and Netty's io_uring "
					+ "jar on the class path; falls back to epoll with the reason logged otherwise) or nio.")
	String mode;

	@Option(names = "--io-required", description = "Fail instead of falling back when the --io mode is unavailable "
			+ "here (the error names the reason).")
	boolean required;

	private IoMode resolved = IoMode.EPOLL;

	/** Checks the option; call it before {@link #apply}. */
	void validate(CommandLine cl) {
		for (IoMode m : IoMode.values()) {
			if (m.label().equals(mode)) {
				resolved = m;
				return;
			}
		}
		throw new CommandLine.ParameterException(cl, "--io : " + mode + " (expected: epoll, io_uring or nio)");
	}

	/** @return the mode asked for */
	IoMode mode() {
		return resolved;
	}

	/** @return {@code transport} with the I/O mode asked for */
	NettyKVTransport apply(NettyKVTransport transport) {
		return transport.ioMode(resolved, required);
	}

	static final class Modes extends java.util.ArrayList<String> {
		Modes() {
			super(java.util.List.of("epoll", "io_uring", "nio"));
		}
	}
}
