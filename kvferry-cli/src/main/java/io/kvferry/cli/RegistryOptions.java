package io.kvferry.cli;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.function.Function;

import io.kvferry.bootstrap.BootstrapClient;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import io.kvferry.bootstrap.server.BootstrapServerMain;
import io.kvferry.registry.etcd.EtcdBootstrapClient;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine;
import reactor.core.Disposable;

/**
 * Where prefill ranks register and decode ranks look them up: the HTTP bootstrap server named by {@code --bootstrap}
 * (default), or etcd with {@code --registry etcd://host:port[,...]}, where {@code --bootstrap} only names the prefill
 * instance. A secured etcd takes the bootstrap server's options: {@code --etcd-ca} (TLS), {@code --etcd-cert} and
 * {@code --etcd-key} (mutual TLS), {@code --etcd-user} with the password in {@code --etcd-password-file} or
 * {@code $KVFERRY_ETCD_PASSWORD}; no option takes the password itself, since options show in process lists.
 */
final class RegistryOptions {

	static final String PASSWORD_ENV = BootstrapServerMain.ETCD_PASSWORD_ENV;

	@Option(names = "--registry", paramLabel = "URI",
			description = "Register and look prefill ranks up in etcd instead of an HTTP bootstrap server: "
					+ "etcd://host:port[,host:port...]; --bootstrap then names the prefill instance (the same name on "
					+ "both sides), no server is involved (default: the HTTP bootstrap server at --bootstrap).")
	String registry;

	@Option(names = "--etcd-ca", paramLabel = "PEM",
			description = "With --registry: speak TLS to etcd (https) and trust the etcd certificates this CA "
					+ "certificate signed (etcdctl's --cacert). Each etcd certificate must name its endpoint.")
	File etcdCa;

	@Option(names = "--etcd-cert", paramLabel = "PEM",
			description = "With --etcd-ca: present this client certificate to etcd (mutual TLS, for etcd run with "
					+ "--client-cert-auth); needs --etcd-key.")
	File etcdCert;

	@Option(names = "--etcd-key", paramLabel = "PEM",
			description = "Private key of --etcd-cert, unencrypted (PKCS#8, or OpenSSL's RSA / EC PRIVATE KEY).")
	File etcdKey;

	@Option(names = "--etcd-user", paramLabel = "NAME",
			description = "With --registry: authenticate to etcd as this user (its role needs readwrite on the "
					+ "kvferry/ prefix). The password comes from --etcd-password-file or $" + PASSWORD_ENV
					+ ", never from the command line.")
	String etcdUser;

	@Option(names = "--etcd-password-file", paramLabel = "FILE",
			description = "File holding the password of --etcd-user (a trailing newline is ignored; keep it mode "
					+ "600). Default: $" + PASSWORD_ENV + ".")
	File etcdPasswordFile;

	@Option(names = "--etcd-timeout", defaultValue = "5s", paramLabel = "DURATION",
			description = "With --registry: longest time one etcd call may take, tries on other members included "
					+ "(default: ${DEFAULT-VALUE}).")
	Duration etcdTimeout;

	/** @return whether ranks use etcd */
	boolean isEtcd() {
		return registry != null;
	}

	/** @return where registrations go, for the ready line: the etcd endpoints, or the bootstrap server */
	String describe(Object bootstrap) {
		return registry == null ? "bootstrap server " + bootstrap
				: "etcd " + registry + " as instance " + bootstrap + (etcdCa != null ? " over TLS" : "")
						+ (etcdUser != null ? " as user " + etcdUser : "");
	}

	/**
	 * @param cl the command, for option errors
	 * @param environment where {@code $KVFERRY_ETCD_PASSWORD} is read
	 * @return the HTTP bootstrap client, or the etcd one configured by these options; the caller disposes it
	 * @throws ParameterException naming the option that is wrong, missing or given without {@code --registry}
	 */
	BootstrapClient client(CommandLine cl, Function<String, String> environment) {
		if (registry == null) {
			onlyWithRegistry(cl, "--etcd-ca", etcdCa);
			onlyWithRegistry(cl, "--etcd-cert", etcdCert);
			onlyWithRegistry(cl, "--etcd-key", etcdKey);
			onlyWithRegistry(cl, "--etcd-user", etcdUser);
			onlyWithRegistry(cl, "--etcd-password-file", etcdPasswordFile);
			return ReactorBootstrapClient.create();
		}
		return etcd(cl, environment);
	}

	/** @return the etcd client these options describe (with {@code --registry}) */
	EtcdBootstrapClient etcd(CommandLine cl, Function<String, String> environment) {
		if ((etcdCert == null) != (etcdKey == null)) {
			throw new ParameterException(cl, "--etcd-cert and --etcd-key go together (expected: both or neither)");
		}
		if (etcdCert != null && etcdCa == null) {
			throw new ParameterException(cl, "--etcd-cert : " + etcdCert + " without --etcd-ca (expected: --etcd-ca "
					+ "too, the CA that signed etcd's certificate)");
		}
		if (etcdPasswordFile != null && etcdUser == null) {
			throw new ParameterException(cl, "--etcd-password-file : " + etcdPasswordFile + " without --etcd-user "
					+ "(expected: --etcd-user too)");
		}
		try {
			EtcdBootstrapClient client = EtcdBootstrapClient.create(registry).timeout(etcdTimeout);
			if (etcdCa != null) {
				client = etcdCert == null ? client.tls(etcdCa.toPath())
						: client.tls(etcdCa.toPath(), etcdCert.toPath(), etcdKey.toPath());
			}
			if (etcdUser != null) {
				client = client.credentials(etcdUser, password(cl, environment));
			}
			return client;
		}
		catch (IllegalArgumentException e) {
			// The registry names the file or the endpoint that is wrong, and why.
			throw new ParameterException(cl, "--registry " + registry + ": " + e.getMessage(), e);
		}
	}

	/** Releases what a client of {@link #client} opened (connections, the etcd client's leases and threads). */
	static void dispose(BootstrapClient client) {
		if (client instanceof Disposable d) {
			d.dispose();
		}
	}

	private String password(CommandLine cl, Function<String, String> environment) {
		if (etcdPasswordFile == null) {
			String password = environment.apply(PASSWORD_ENV);
			if (password == null || password.isEmpty()) {
				throw new ParameterException(cl, "--etcd-user : " + etcdUser + " without a password (expected: "
						+ "--etcd-password-file FILE or $" + PASSWORD_ENV + "; the password is never an option)");
			}
			return password;
		}
		Path file = etcdPasswordFile.toPath();
		String password;
		try {
			password = Files.readString(file, StandardCharsets.UTF_8);
		}
		catch (IOException e) {
			throw new ParameterException(cl, "--etcd-password-file : " + file + " cannot be read (" + e + ")");
		}
		// One trailing line end, as echo and editors leave it; nothing else is trimmed.
		if (password.endsWith("\r\n")) {
			password = password.substring(0, password.length() - 2);
		}
		else if (password.endsWith("\n")) {
			password = password.substring(0, password.length() - 1);
		}
		if (password.isEmpty()) {
			throw new ParameterException(cl, "--etcd-password-file : " + file + " is empty (expected: the password "
					+ "of --etcd-user " + etcdUser + ")");
		}
		return password;
	}

	private static void onlyWithRegistry(CommandLine cl, String option, Object value) {
		if (value != null) {
			throw new ParameterException(cl, option + " : " + value + " (expected: only with --registry)");
		}
	}
}
