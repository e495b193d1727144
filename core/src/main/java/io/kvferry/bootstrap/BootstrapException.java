package io.kvferry.bootstrap;

import io.kvferry.KVFerryException;
import org.jspecify.annotations.Nullable;

/**
 * A bootstrap server call failed. {@link #kind()} tells why; {@link #status()} is the HTTP status, or 0 when no answer
 * came.
 */
public class BootstrapException extends KVFerryException {

	private static final long serialVersionUID = 1L;

	/** Why a bootstrap call failed. */
	public enum Kind {
		/** 400: the server rejected the request; the message names the field. */
		BAD_REQUEST,
		/** 404: no such rank registered. */
		NOT_FOUND,
		/** 503: the prefill instance has not registered all its ranks yet. */
		NOT_READY,
		/** 401: a bearer token is required or wrong. */
		UNAUTHORIZED,
		/** No answer within the timeout. */
		TIMEOUT,
		/** Connection refused, reset or unresolvable host. */
		UNREACHABLE,
		/** Any other status or an unreadable answer. */
		OTHER
	}

	private final Kind kind;
	private final int status;

	public BootstrapException(Kind kind, int status, String message) {
		super(message);
		this.kind = kind;
		this.status = status;
	}

	public BootstrapException(Kind kind, int status, String message, @Nullable Throwable cause) {
		super(message, cause);
		this.kind = kind;
		this.status = status;
	}

	public Kind kind() {
		return kind;
	}

	/** @return the HTTP status, or 0 when the server did not answer */
	public int status() {
		return status;
	}

	/** @return whether trying again later may succeed (not ready, timeout, unreachable, 5xx) */
	public boolean isRetryable() {
		return kind == Kind.NOT_READY || kind == Kind.TIMEOUT || kind == Kind.UNREACHABLE
				|| (kind == Kind.OTHER && status >= 500);
	}
}
