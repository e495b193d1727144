package io.kvferry.bootstrap.server.internal;

/**
 * A request the server refuses, with the HTTP status to answer and a plain-text message for the client. Thrown while
 * parsing and validating; the handler turns it into a response, so bad input never becomes a 500.
 */
public final class RequestException extends RuntimeException {

	private static final long serialVersionUID = 1L;

	private final int status;

	private RequestException(int status, String message) {
		super(message);
		this.status = status;
	}

	/**
	 * @param message names the offending field or parameter
	 * @return a 400 Bad Request
	 */
	public static RequestException badRequest(String message) {
		return new RequestException(400, message);
	}

	/**
	 * @param message says what is wrong with the credentials, never the expected token
	 * @return a 401 Unauthorized
	 */
	public static RequestException unauthorized(String message) {
		return new RequestException(401, message);
	}

	/**
	 * @param message says what was not found
	 * @return a 404 Not Found
	 */
	public static RequestException notFound(String message) {
		return new RequestException(404, message);
	}

	/**
	 * @param maxBodyBytes the configured limit
	 * @return a 413 Content Too Large
	 */
	public static RequestException tooLarge(int maxBodyBytes) {
		return new RequestException(413, "request body : larger than " + maxBodyBytes + " bytes (expected: at most "
				+ maxBodyBytes + " bytes)");
	}

	/**
	 * @param registered how many distinct prefill ranks registered so far
	 * @return a 503 Service Unavailable with SGLang's wording
	 */
	public static RequestException notReady(int registered) {
		return new RequestException(503, "Prefill server not fully registered yet (" + registered
				+ " workers registered).");
	}

	/**
	 * @param message says which limit is reached and how to raise it
	 * @return a 503 Service Unavailable
	 */
	public static RequestException unavailable(String message) {
		return new RequestException(503, message);
	}

	/** @return the HTTP status to answer */
	public int status() {
		return status;
	}

	// Expected and frequent (junk traffic): a stack trace would only cost time.
	@Override
	public synchronized Throwable fillInStackTrace() {
		return this;
	}
}
