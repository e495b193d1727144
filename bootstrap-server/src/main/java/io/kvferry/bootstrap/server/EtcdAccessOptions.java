package io.kvferry.bootstrap.server;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;
import java.util.function.Function;

import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Option;

/**
 * The standalone server's options for reaching a secured etcd: {@code --etcd-ca} (TLS), {@code --etcd-cert} and
 * {@code --etcd-key} (mutual TLS), {@code --etcd-user} with the password from {@code --etcd-password-file} or the
 * environment. There is no option that takes the password itself, since options show in process lists.
 */
final class EtcdAccessOptions {

	// Created when picocli builds the command, after main() chose the logback configuration.
	private static final Logger LOG = LoggerFactory.getLogger(EtcdAccessOptions.class);

	private static final String PASSWORD_ENV = BootstrapServerMain.ETCD_PASSWORD_ENV;

	@Option(names = "--etcd-ca", paramLabel = "PEM",
			description = "With --registry: speak TLS to etcd (https) and trust the etcd certificates this CA "
					+ "certificate signed (etcdctl's --cacert). Each etcd certificate must name its endpoint.")
	private @Nullable File etcdCa;

	@Option(names = "--etcd-cert", paramLabel = "PEM",
			description = "With --etcd-ca: present this client certificate to etcd (mutual TLS, for etcd run with "
					+ "--client-cert-auth); needs --etcd-key.")
	private @Nullable File etcdCert;

	@Option(names = "--etcd-key", paramLabel = "PEM",
			description = "Private key of --etcd-cert, unencrypted (PKCS#8, or OpenSSL's RSA / EC PRIVATE KEY).")
	private @Nullable File etcdKey;

	@Option(names = "--etcd-user", paramLabel = "NAME",
			description = "With --registry: authenticate to etcd as this user (its role needs readwrite on the "
					+ "kvferry/ prefix). The password comes from --etcd-password-file or $" + PASSWORD_ENV
					+ ", never from the command line.")
	private @Nullable String etcdUser;

	@Option(names = "--etcd-password-file", paramLabel = "FILE",
			description = "File holding the password of --etcd-user (a trailing newline is ignored; keep it mode "
					+ "600). Default: $" + PASSWORD_ENV + ".")
	private @Nullable File etcdPasswordFile;

	/** @return whether a client certificate is presented to etcd */
	boolean hasClientCertificate() {
		return etcdCert != null;
	}

	/**
	 * @throws IllegalArgumentException naming the first etcd option given although no etcd registry is
	 */
	void checkUnused() {
		onlyWithRegistry("--etcd-ca", etcdCa);
		onlyWithRegistry("--etcd-cert", etcdCert);
		onlyWithRegistry("--etcd-key", etcdKey);
		onlyWithRegistry("--etcd-user", etcdUser);
		onlyWithRegistry("--etcd-password-file", etcdPasswordFile);
	}

	/**
	 * Applies --etcd-ca, --etcd-cert, --etcd-key, --etcd-user and the password to the etcd registry.
	 *
	 * @param config a configuration with an etcd registry
	 * @param environment where {@value #PASSWORD_ENV} is read
	 * @return the configuration with the access applied
	 * @throws IllegalArgumentException naming the option that is wrong or missing
	 */
	BootstrapServer apply(BootstrapServer config, Function<String, @Nullable String> environment) {
		BootstrapServer secured = config;
		if ((etcdCert == null) != (etcdKey == null)) {
			throw new IllegalArgumentException("--etcd-cert and --etcd-key go together (expected: both or neither)");
		}
		if (etcdCert != null && etcdCa == null) {
			throw new IllegalArgumentException("--etcd-cert : " + etcdCert + " without --etcd-ca (expected: "
					+ "--etcd-ca too, the CA that signed etcd's certificate)");
		}
		if (etcdCa != null) {
			secured = secured.etcdTls(etcdCa.toPath(), etcdCert == null ? null : etcdCert.toPath(),
					etcdKey == null ? null : etcdKey.toPath());
		}
		if (etcdUser != null) {
			secured = secured.etcdCredentials(etcdUser, password(environment));
			if (etcdCa == null) {
				LOG.warn("The etcd password of user {} crosses the network in clear: etcd is spoken to over plain "
						+ "http (--etcd-ca speaks TLS)", etcdUser);
			}
		}
		else if (etcdPasswordFile != null) {
			throw new IllegalArgumentException("--etcd-password-file : " + etcdPasswordFile + " without --etcd-user "
					+ "(expected: --etcd-user too)");
		}
		return secured;
	}

	/** @return the password of --etcd-user: from --etcd-password-file, else from the environment */
	private String password(Function<String, @Nullable String> environment) {
		if (etcdPasswordFile == null) {
			String password = environment.apply(PASSWORD_ENV);
			if (password == null || password.isEmpty()) {
				throw new IllegalArgumentException("--etcd-user : " + etcdUser + " without a password (expected: "
						+ "--etcd-password-file FILE or $" + PASSWORD_ENV + "; the password is never an option)");
			}
			return password;
		}
		Path file = etcdPasswordFile.toPath();
		if (!Files.isRegularFile(file) || !Files.isReadable(file)) {
			throw new IllegalArgumentException("--etcd-password-file : " + file + " (expected: a readable file; "
					+ (Files.exists(file) ? "it is not a readable regular file" : "no such file") + ")");
		}
		String password;
		try {
			password = Files.readString(file, StandardCharsets.UTF_8);
		}
		catch (IOException e) {
			throw new IllegalArgumentException("--etcd-password-file : " + file + " cannot be read ("
					+ BootstrapServerMain.describe(e) + ")", e);
		}
		// One trailing line end, as echo and editors leave it; nothing else is trimmed.
		if (password.endsWith("\r\n")) {
			password = password.substring(0, password.length() - 2);
		}
		else if (password.endsWith("\n")) {
			password = password.substring(0, password.length() - 1);
		}
		if (password.isEmpty()) {
			throw new IllegalArgumentException("--etcd-password-file : " + file + " is empty (expected: the password "
					+ "of --etcd-user " + etcdUser + ")");
		}
		warnIfOthersRead(file);
		return password;
	}

	private static void warnIfOthersRead(Path file) {
		try {
			Set<PosixFilePermission> permissions = Files.getPosixFilePermissions(file);
			if (permissions.contains(PosixFilePermission.OTHERS_READ)
					|| permissions.contains(PosixFilePermission.GROUP_READ)) {
				LOG.warn("--etcd-password-file {} is readable by other users ({}): chmod 600 it", file,
						PosixFilePermissions.toString(permissions));
			}
		}
		catch (UnsupportedOperationException | IOException e) {
			// Not a POSIX file system: nothing to say.
		}
	}

	private static void onlyWithRegistry(String option, @Nullable Object value) {
		if (value != null) {
			throw new IllegalArgumentException(option + " : " + value + " (expected: only with --registry)");
		}
	}
}
