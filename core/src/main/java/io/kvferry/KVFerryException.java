package io.kvferry;

/** Root of every exception kvferry throws or signals. Unchecked, as Reactor errors are. */
public class KVFerryException extends RuntimeException {

	private static final long serialVersionUID = 1L;

	public KVFerryException(String message) {
		super(message);
	}

	public KVFerryException(String message, Throwable cause) {
		super(message, cause);
	}
}
