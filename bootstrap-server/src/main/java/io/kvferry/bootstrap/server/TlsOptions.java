package io.kvferry.bootstrap.server;

import java.io.File;

import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;

/** The standalone server's HTTPS options: {@code --tls-cert}, {@code --tls-key} and the key's password. */
final class TlsOptions {

	private static final String KEY_PASSWORD_ENV = BootstrapServerMain.TLS_KEY_PASSWORD_ENV;

	@Option(names = "--tls-cert", paramLabel = "PEM",
			description = "Serve HTTPS with this certificate chain (PEM, leaf first); needs --tls-key.")
	private @Nullable File tlsCert;

	@Option(names = "--tls-key", paramLabel = "PEM",
			description = "Private key of --tls-cert (PKCS#8 PEM, encrypted or not).")
	private @Nullable File tlsKey;

	@Option(names = "--tls-key-password", paramLabel = "PASSWORD",
			defaultValue = "${env:" + KEY_PASSWORD_ENV + "}",
			description = "Password of an encrypted --tls-key (default: $" + KEY_PASSWORD_ENV + ", else none).")
	private @Nullable String tlsKeyPassword;

	/**
	 * @param commandLine the command, for option errors
	 * @return the server TLS context from --tls-cert and --tls-key, or null when neither is given
	 * @throws ParameterException naming the option when a file is missing or unreadable, or one is given alone
	 */
	@Nullable SslContext context(CommandLine commandLine) {
		if (tlsCert == null && tlsKey == null) {
			return null;
		}
		if (tlsCert == null || tlsKey == null) {
			throw new ParameterException(commandLine, "Invalid option value: --tls-cert and --tls-key go "
					+ "together (expected: both or neither)");
		}
		checkReadable(commandLine, "--tls-cert", tlsCert);
		checkReadable(commandLine, "--tls-key", tlsKey);
		String password = tlsKeyPassword == null || tlsKeyPassword.isEmpty() ? null : tlsKeyPassword;
		try {
			return SslContextBuilder.forServer(tlsCert, tlsKey, password).build();
		}
		catch (Exception e) {
			// Netty signals unreadable PEM with IllegalArgumentException, key and TLS setup errors with SSLException.
			throw new ParameterException(commandLine, "Invalid option value: --tls-cert " + tlsCert
					+ " / --tls-key " + tlsKey + ": " + BootstrapServerMain.describe(e) + " (expected: a PEM certificate "
					+ "chain and its PKCS#8 PEM private key)", e);
		}
	}

	private static void checkReadable(CommandLine commandLine, String option, File file) {
		if (!file.isFile() || !file.canRead()) {
			throw new ParameterException(commandLine, "Invalid option value: " + option + " : " + file
					+ " (expected: a readable PEM file)");
		}
	}
}
