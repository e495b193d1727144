package io.kvferry.registry.etcd;

import java.net.ConnectException;
import java.time.Duration;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;

import io.etcd.jetcd.common.exception.ErrorCode;
import io.etcd.jetcd.common.exception.EtcdException;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.kvferry.bootstrap.BootstrapException;

/** Turns what etcd or its client failed with into {@link BootstrapException}s that name the call and the cluster. */
final class EtcdErrors {

	private EtcdErrors() {
	}

	/**
	 * @param call what was asked, e.g. {@code "register dp=0 tp=1 pp=0 of 10.0.0.7:8998"}
	 * @param endpoints the etcd endpoints, for the message
	 * @param timeout the call's timeout
	 * @param error what the call failed with
	 * @return a typed failure; a {@link BootstrapException} is returned as it is
	 */
	static BootstrapException map(String call, String endpoints, Duration timeout, Throwable error) {
		Throwable e = unwrap(error);
		String where = call + " on etcd " + endpoints + ": ";
		if (e instanceof BootstrapException b) {
			return b.getMessage().startsWith(call) ? b
					: new BootstrapException(b.kind(), b.status(), where + b.getMessage(), b.getCause());
		}
		if (e instanceof TimeoutException) {
			return new BootstrapException(BootstrapException.Kind.TIMEOUT, 0, where + "no answer within "
					+ timeout.toMillis() + " ms (is a quorum of etcd members running and reachable?)", e);
		}
		if (isUnreachable(e)) {
			return new BootstrapException(BootstrapException.Kind.UNREACHABLE, 0, where + "etcd unreachable ("
					+ describe(e) + ")", e);
		}
		return new BootstrapException(BootstrapException.Kind.OTHER, 0, where + describe(e), e);
	}

	/**
	 * @return whether the failure passes by itself: no member reachable, no leader, a leader change or a proposal that
	 * timed out while a member was lost
	 */
	static boolean isTransient(Throwable error) {
		Throwable e = unwrap(error);
		if (isUnreachable(e) || e instanceof TimeoutException) {
			return true;
		}
		String message = String.valueOf(e.getMessage());
		return message.contains("leader changed") || message.contains("no leader")
				|| message.contains("request timed out") || message.contains("too many requests");
	}

	/** @return whether etcd answered that the lease does not exist (any more) */
	static boolean isLeaseNotFound(Throwable error) {
		return String.valueOf(unwrap(error).getMessage()).contains("requested lease not found");
	}

	/** @return the failure of a call that failed transiently until its timeout */
	static BootstrapException gaveUp(Throwable last, Duration timeout) {
		return new BootstrapException(isUnreachable(unwrap(last)) ? BootstrapException.Kind.UNREACHABLE
				: BootstrapException.Kind.TIMEOUT, 0, "etcd did not answer within " + timeout.toMillis()
						+ " ms; last failure: " + describe(unwrap(last)), last);
	}

	private static boolean isUnreachable(Throwable e) {
		for (Throwable t = e; t != null; t = t.getCause()) {
			if (t instanceof ConnectException) {
				return true;
			}
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

	static String describe(Throwable e) {
		String message = e.getMessage();
		return message == null || message.isBlank() ? e.getClass().getSimpleName()
				: e.getClass().getSimpleName() + ": " + message;
	}
}
