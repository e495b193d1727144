package io.kvferry.registry.etcd;

import java.security.cert.CertificateException;
import java.time.Duration;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import javax.net.ssl.SSLException;

import io.etcd.jetcd.common.exception.ErrorCode;
import io.etcd.jetcd.common.exception.EtcdException;
import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.StatusRuntimeException;
import io.kvferry.bootstrap.BootstrapException;
import io.kvferry.spi.ConnectFailure;
import io.netty.handler.ssl.NotSslRecordException;
import org.jspecify.annotations.Nullable;

/**
 * Turns what etcd or its client failed with into {@link BootstrapException}s that name the call, the cluster and, for
 * TLS and authentication, what failed and what to check: jetcd reports them as bare gRPC statuses (a refused password
 * as {@code UNAUTHENTICATED} with no description, a refused client certificate as {@code UNAVAILABLE}).
 */
final class EtcdErrors {

	private static final int MAX_CAUSES = 16;

	/** The address Netty appends to a connect failure: {@code "Connection refused: /10.0.0.1:2379"}. */
	private static final Pattern ANNOTATED_ADDRESS = Pattern.compile(": [^\\s/]*/([^\\s/]+:\\d+)$");

	private EtcdErrors() {
	}

	/**
	 * How the client reaches etcd, for messages.
	 *
	 * @param where the endpoints with their scheme, the TLS material and the user
	 * @param tls the TLS configuration, or null for plain {@code http://}
	 * @param user the etcd user, or null when the client does not authenticate
	 * @param prefix the key prefix, which the user's role must be allowed to read and write
	 */
	record Access(String where, @Nullable EtcdTls tls, @Nullable String user, String prefix) {
	}

	/**
	 * @param call what was asked, e.g. {@code "register dp=0 tp=1 pp=0 of 10.0.0.7:8998"}
	 * @param access how etcd is reached, for the message
	 * @param timeout the call's timeout
	 * @param error what the call failed with
	 * @return a typed failure; a {@link BootstrapException} is returned as it is
	 */
	static BootstrapException map(String call, Access access, Duration timeout, Throwable error) {
		Throwable e = unwrap(error);
		String where = call + " on etcd " + access.where() + ": ";
		if (e instanceof BootstrapException b) {
			String message = Objects.requireNonNullElse(b.getMessage(), "");
			return message.startsWith(call) ? b
					: new BootstrapException(b.kind(), b.status(), where + message, b.getCause());
		}
		Throwable tls = tlsFailure(e);
		if (tls != null) {
			// Configuration, not a passing state: not retried, and not UNREACHABLE (which callers retry).
			return new BootstrapException(BootstrapException.Kind.OTHER, 0, where + "TLS failed: " + tlsHint(tls,
					access) + " (" + describe(tls) + ")", e);
		}
		ConnectFailure connect = connectFailure(e);
		if (connect != null) {
			return new BootstrapException(connect == ConnectFailure.TIMED_OUT ? BootstrapException.Kind.TIMEOUT
					: BootstrapException.Kind.UNREACHABLE, 0, where + cannotConnect(connect, e, access), e);
		}
		if (e instanceof TimeoutException) {
			return new BootstrapException(BootstrapException.Kind.TIMEOUT, 0, where + "no answer within "
					+ timeout.toMillis() + " ms (is a quorum of etcd members running and reachable?)", e);
		}
		if (isUnreachable(e)) {
			return new BootstrapException(BootstrapException.Kind.UNREACHABLE, 0, where + "etcd unreachable ("
					+ detail(e) + ")" + plainTextHint(e, access), e);
		}
		String auth = authFailure(e, access);
		if (auth != null) {
			return new BootstrapException(BootstrapException.Kind.UNAUTHORIZED, 0, where + auth, e);
		}
		return new BootstrapException(BootstrapException.Kind.OTHER, 0, where + detail(e), e);
	}

	/**
	 * @return whether the failure passes by itself: no member reachable, no leader, a leader change or a proposal that
	 * timed out while a member was lost; never a TLS or authentication failure
	 */
	static boolean isTransient(Throwable error) {
		Throwable e = unwrap(error);
		if (tlsFailure(e) != null) {
			return false;
		}
		if (isUnreachable(e) || e instanceof TimeoutException) {
			return true;
		}
		String message = String.valueOf(e.getMessage());
		// An ended auth token (jetcd has dropped it and fetches another on the next try) passes by itself too, and so
		// does a member's connection that closed under the call (its member was killed): the next try picks another.
		return message.contains("leader changed") || message.contains("no leader") || message.contains("channel closed")
				|| message.contains("request timed out") || message.contains("too many requests")
				|| message.contains("invalid auth token") || message.contains("revision of auth store is old");
	}

	/** @return whether etcd answered that the lease does not exist (any more) */
	static boolean isLeaseNotFound(Throwable error) {
		return String.valueOf(unwrap(error).getMessage()).contains("requested lease not found");
	}

	/** @return the failure of a call that failed transiently until its timeout */
	static BootstrapException gaveUp(Throwable last, Duration timeout, Access access) {
		Throwable e = unwrap(last);
		ConnectFailure connect = connectFailure(e);
		return new BootstrapException(isUnreachable(e) ? BootstrapException.Kind.UNREACHABLE
				: BootstrapException.Kind.TIMEOUT, 0, "etcd did not answer within " + timeout.toMillis()
						+ " ms; last failure: " + (connect != null ? cannotConnect(connect, e, access)
								: detail(e) + plainTextHint(e, access)), last);
	}

	/** @return the failure to connect to a member among the causes, or null; a TLS failure has its own words */
	private static @Nullable ConnectFailure connectFailure(Throwable e) {
		ConnectFailure connect = ConnectFailure.of(e);
		return connect == ConnectFailure.TLS ? null : connect;
	}

	/**
	 * @return what kept the client from a member, naming the member: the address the socket layer annotated its
	 *         failure with, else the endpoints
	 */
	private static String cannotConnect(ConnectFailure connect, Throwable e, Access access) {
		String dialled = null;
		int depth = 0;
		for (Throwable t = e; t != null && dialled == null && depth < MAX_CAUSES; t = t.getCause(), depth++) {
			Matcher m = ANNOTATED_ADDRESS.matcher(String.valueOf(t.getMessage()));
			if (m.find()) {
				dialled = m.group(1);
			}
		}
		if (dialled == null) {
			dialled = access.where().substring(1, access.where().length() - 1);
		}
		return "cannot connect: " + connect.describe(dialled, e);
	}

	/** @return the TLS failure among the causes (a handshake, certificate or non-TLS peer failure), or null */
	static @Nullable Throwable tlsFailure(Throwable e) {
		int depth = 0;
		for (Throwable t = e; t != null && depth < MAX_CAUSES; t = t.getCause(), depth++) {
			if (t instanceof SSLException || t instanceof CertificateException || t instanceof NotSslRecordException) {
				return t;
			}
		}
		return null;
	}

	private static String tlsHint(Throwable tls, Access access) {
		String message = String.valueOf(tls.getMessage()).toLowerCase(Locale.ROOT);
		if (access.tls() == null) {
			return "etcd's endpoint expects TLS, but this client speaks plain http";
		}
		if (tls instanceof NotSslRecordException || message.contains("not an ssl/tls record")
				|| message.contains("unrecognized ssl message")) {
			return "the endpoint does not speak TLS (does etcd serve http://? then give no CA certificate)";
		}
		if (message.contains("pkix") || message.contains("certification path")
				|| message.contains("unable to find valid")) {
			return "etcd's server certificate is not signed by " + access.tls().trustSource()
					+ " (give the CA that signed it, as etcdctl --cacert)";
		}
		if (message.contains("subject alternative") || message.contains("no name matching")
				|| message.contains("doesn't match") || message.contains("does not match")) {
			return "etcd's server certificate does not name the endpoint dialed (its subject alternative names "
					+ "must include the endpoint's host name or IP address)";
		}
		if (message.contains("certificate_required") || message.contains("bad_certificate")
				|| message.contains("unknown_ca") || message.contains("certificate_unknown")
				|| message.contains("access_denied")) {
			if (access.tls().isCallersContext()) {
				return "etcd refused this client (with --client-cert-auth it requires a client certificate signed by a "
						+ "CA in its --trusted-ca-file: none was given, or one it does not trust)";
			}
			return access.tls().presentsCertificate()
					? "etcd refused this client's certificate (is it signed by a CA in etcd's --trusted-ca-file, "
							+ "unexpired, and made for client authentication?)"
					: "etcd requires a client certificate (it runs with --client-cert-auth) and none was given: "
							+ "give one with its key";
		}
		if (message.contains("expired") || message.contains("validity")) {
			return "a certificate is expired or not yet valid (check the clocks too)";
		}
		return "the TLS handshake with etcd failed";
	}

	/**
	 * A client without TLS that reaches an etcd serving https sees the connection closed without a word; say what
	 * is likely when that is the failure.
	 */
	private static String plainTextHint(Throwable e, Access access) {
		if (access.tls() != null || !isUnreachable(e)) {
			return "";
		}
		if (connectFailure(e) != null) {
			// The connection never opened: no TLS peer closed it.
			return "";
		}
		return " (if etcd serves https, this client must speak TLS: give etcd's CA certificate)";
	}

	/** @return what to say about an authentication or permission failure, or null when it is none */
	private static @Nullable String authFailure(Throwable e, Access access) {
		boolean unauthenticated = false;
		String user = access.user() == null ? null : "'" + access.user() + "'";
		int depth = 0;
		for (Throwable t = e; t != null && depth < MAX_CAUSES; t = t.getCause(), depth++) {
			String message = String.valueOf(t.getMessage());
			if (message.contains("invalid user ID or password") || message.contains("authentication failed")) {
				return "authentication failed: etcd refused user " + user + " with the password given ("
						+ etcdMessage(t) + ")";
			}
			if (message.contains("user name is empty")) {
				return "authentication required: etcd has authentication enabled and this client gave no user ("
						+ etcdMessage(t) + "; give an etcd user and its password)";
			}
			if (message.contains("authentication is not enabled")) {
				return "authentication failed: user " + user + " was given but etcd has authentication disabled ("
						+ etcdMessage(t) + "; give no user, or run etcdctl auth enable)";
			}
			if (message.contains("user name not found")) {
				return "authentication failed: etcd has no user " + user + " (" + etcdMessage(t) + ")";
			}
			if (message.contains("permission denied")) {
				return "permission denied: etcd user " + (user == null ? "(this client's certificate name)" : user)
						+ " may not read and write keys under '" + access.prefix() + "/' (" + etcdMessage(t)
						+ "; grant its role readwrite on the prefix: etcdctl role grant-permission ROLE --prefix=true "
						+ "readwrite " + access.prefix() + "/)";
			}
			if (message.contains("invalid auth token")) {
				return "authentication failed: etcd no longer accepts the token of user " + user + " ("
						+ etcdMessage(t) + ")";
			}
			unauthenticated |= code(t) == Status.Code.UNAUTHENTICATED || code(t) == Status.Code.PERMISSION_DENIED;
		}
		if (unauthenticated) {
			return "authentication failed" + (user == null ? "" : " for user " + user) + " (" + detail(e) + ")";
		}
		return null;
	}

	private static Status.@Nullable Code code(Throwable t) {
		if (t instanceof StatusRuntimeException s) {
			return s.getStatus().getCode();
		}
		if (t instanceof StatusException s) {
			return s.getStatus().getCode();
		}
		if (t instanceof EtcdException etcd) {
			return switch (etcd.getErrorCode()) {
				case UNAUTHENTICATED -> Status.Code.UNAUTHENTICATED;
				case PERMISSION_DENIED -> Status.Code.PERMISSION_DENIED;
				default -> null;
			};
		}
		return null;
	}

	/** @return etcd's own words, without gRPC's status prefix */
	private static String etcdMessage(Throwable t) {
		String message = String.valueOf(t.getMessage());
		int at = message.indexOf("etcdserver: ");
		return at >= 0 ? message.substring(at) : message;
	}

	private static boolean isUnreachable(Throwable e) {
		if (connectFailure(e) != null) {
			return true;
		}
		for (Throwable t = e; t != null; t = t.getCause()) {
			if (t instanceof EtcdException etcd && (etcd.getErrorCode() == ErrorCode.UNAVAILABLE
					|| etcd.getErrorCode() == ErrorCode.DEADLINE_EXCEEDED)) {
				return true;
			}
			if (t instanceof StatusRuntimeException s && (s.getStatus().getCode() == Status.Code.UNAVAILABLE
					|| s.getStatus().getCode() == Status.Code.DEADLINE_EXCEEDED)) {
				return true;
			}
			if (t.getCause() == t) {
				break;
			}
		}
		return false;
	}

	private static Throwable unwrap(Throwable e) {
		Throwable t = e;
		while ((t instanceof CompletionException || t instanceof ExecutionException) && t.getCause() != null) {
			t = t.getCause();
		}
		if (t instanceof CancellationException && t.getCause() != null) {
			t = t.getCause();
		}
		return t;
	}

	/** @return the failure and, when it says nothing itself (jetcd's bare statuses), what caused it */
	private static String detail(Throwable e) {
		String message = describe(e);
		int depth = 0;
		for (Throwable t = e.getCause(); t != null && depth < MAX_CAUSES; t = t.getCause(), depth++) {
			if (t.getMessage() != null && !t.getMessage().isBlank() && !message.contains(t.getMessage())) {
				message += ": " + describe(t);
			}
		}
		return message;
	}

	static String describe(Throwable e) {
		String message = e.getMessage();
		return message == null || message.isBlank() ? e.getClass().getSimpleName()
				: e.getClass().getSimpleName() + ": " + message;
	}
}
