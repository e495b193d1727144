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
		if (e instanceof BootstrapException b) {
			return b;
		}
		String where = call + " on etcd " + endpoints + ": ";
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
