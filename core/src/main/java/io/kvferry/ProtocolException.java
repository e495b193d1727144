package io.kvferry;

/** A peer spoke the transfer protocol wrongly: a malformed frame, an incompatible handshake, a forbidden write. */
public class ProtocolException extends KVFerryException {

	private static final long serialVersionUID = 1L;

	public ProtocolException(String message) {
		super(message);
	}

	public ProtocolException(String message, Throwable cause) {
		super(message, cause);
	}
}
