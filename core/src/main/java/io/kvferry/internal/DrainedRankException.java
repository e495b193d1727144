package io.kvferry.internal;

import io.kvferry.KVFerryException;

/** A room could not reach a prefill rank that announced a drain before it went away. */
final class DrainedRankException extends KVFerryException {

	private static final long serialVersionUID = 1L;

	DrainedRankException(String message, Throwable cause) {
		super(message, cause);
	}
}
