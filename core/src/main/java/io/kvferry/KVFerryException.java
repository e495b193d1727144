package io.kvferry;

import org.jspecify.annotations.Nullable;

/** Root of every exception kvferry throws or signals. Unchecked, as Reactor errors are. */
public class KVFerryException extends RuntimeException {

	private static final long serialVersionUID = 1L;

	public KVFerryException(String message) {
		super(message);
	}

	public KVFerryException(String message, @Nullable Throwable cause) {
		super(message, cause);
	}
}
