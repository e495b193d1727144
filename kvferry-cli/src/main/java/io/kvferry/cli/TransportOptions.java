package io.kvferry.cli;

import io.kvferry.KVFerryException;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine;

/**
 * Which KV transport the command's ranks use: kvferry's TCP transport with its same-host ring ({@code shm}), TCP only
 * ({@code tcp}), or UCX ({@code ucx}, with {@code --ucx-tls}).
 */
final class TransportOptions {

	static final String SHM = "shm";
	static final String TCP = "tcp";
	static final String UCX = "ucx";

	@Option(names = "--transport", paramLabel = "shm|tcp|ucx", completionCandidates = Kinds.class,
			description = "'shm': KV bytes through shared memory (a ring under /dev/shm) when prefill and decode run on "
					+ "one host, TCP otherwise (the reason is logged); 'tcp': always TCP; 'ucx': UCX (--ucx-tls), "
					+ "decode reading one-sided where UCX does RMA natively (default: shm for demo, tcp for prefill and "
					+ "decode; both sides of a connection need shm for it to apply, and both ucx for UCX).")
	String kind;

	@Option(names = "--ucx-tls", paramLabel = "LIST",
			description = "With --transport ucx: the UCX transports, as UCX_TLS names them: tcp; posix,cma,self "
					+ "(shared memory, one host); rc,ud,sm,self (InfiniBand or RoCE). Default: posix,cma,self for demo "
					+ "(both ranks run on this host), UCX's own choice (UCX_TLS, else all it finds) for prefill and "
					+ "decode.")
	String ucxTls;

	@Mixin
	IoOptions io;

	private TransportKind chosen;

	/**
	 * Checks the options; without {@code --transport}, {@code defaultKind} applies, and without {@code --ucx-tls},
	 * {@code defaultTls}.
	 *
	 * @throws KVFerryException when UCX is asked for and cannot run here (a command that could not run)
	 */
	void validate(CommandLine cl, String defaultKind, String defaultTls) {
		if (kind == null) {
			kind = defaultKind;
		}
		if (!SHM.equals(kind) && !TCP.equals(kind) && !UCX.equals(kind)) {
			throw new CommandLine.ParameterException(cl, "--transport : " + kind + " (expected: shm, tcp or ucx)");
		}
		if (ucxTls != null && !UCX.equals(kind)) {
			throw new CommandLine.ParameterException(cl, "--ucx-tls needs --transport ucx");
		}
		io.validate(cl);
		if (UCX.equals(kind)) {
			String missing = UcxTransports.unavailable();
			if (missing != null) {
				throw new KVFerryException("--transport ucx: " + missing + "; or run with --transport tcp");
			}
			chosen = new UcxTransports(ucxTls == null ? defaultTls : ucxTls.trim());
		}
		else {
			chosen = new NettyTransports(SHM.equals(kind), io);
		}
	}

	/** @return the transports the options chose (after {@link #validate}) */
	TransportKind kind() {
		return chosen;
	}

	static final class Kinds extends java.util.ArrayList<String> {
		Kinds() {
			super(java.util.List.of(SHM, TCP, UCX));
		}
	}
}
