package io.kvferry.bootstrap.server;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * A bare-socket client for junk traffic: sends bytes exactly as given and reads whatever comes back until the server
 * closes. Blocking, for test threads only; every read is bounded by {@link #READ_TIMEOUT}.
 */
final class RawHttp {

	/** Longest wait for any byte (or the close) from the server: anything slower is reported as a hang. */
	static final Duration READ_TIMEOUT = Duration.ofSeconds(20);

	private static final int MAX_ANSWER_BYTES = 1 << 20;

	/** How the request goes out. */
	enum Mode {
		/** All at once. */
		WHOLE,
		/** All at once, then the output is shut down (the server sees end of stream). */
		HALF_CLOSE,
		/** One byte per write, each flushed with Nagle off. */
		BYTE_BY_BYTE,
		/** Nothing at all. */
		SILENT
	}

	/**
	 * What came back.
	 *
	 * @param status the status code, 0 when the server closed without answering (or answered something that is not
	 *        HTTP: see {@link #bytes})
	 * @param bytes everything the server sent
	 * @param writeFailed the server closed or reset the connection before the whole request was written
	 * @param reset the connection was reset while reading
	 * @param hung no byte and no close within {@link #READ_TIMEOUT}
	 */
	record Answer(int status, byte[] bytes, boolean writeFailed, boolean reset, boolean hung) {

		/** @return the answer's start, printable, for failure messages */
		String preview() {
			String text = new String(bytes, 0, Math.min(bytes.length, 200), StandardCharsets.ISO_8859_1);
			return (hung ? "[hung] " : "") + (reset ? "[reset] " : "") + (writeFailed ? "[write failed] " : "")
					+ text.replace("\r", "\\r").replace("\n", "\\n");
		}

		/** @return the body after the (last) head, as UTF-8 */
		String body() {
			String text = new String(bytes, StandardCharsets.UTF_8);
			int end = text.lastIndexOf("\r\n\r\n");
			return end < 0 ? "" : text.substring(end + 4);
		}
	}

	private RawHttp() {
	}

	/**
	 * Sends a request and reads until the server closes.
	 *
	 * @param port the server's port on 127.0.0.1
	 * @param request the bytes to send
	 * @param mode how to send them
	 * @return what came back
	 */
	static Answer exchange(int port, byte[] request, Mode mode) {
		try (Socket socket = new Socket()) {
			socket.connect(new InetSocketAddress("127.0.0.1", port), (int) READ_TIMEOUT.toMillis());
			socket.setSoTimeout((int) READ_TIMEOUT.toMillis());
			socket.setTcpNoDelay(true);
			boolean writeFailed = false;
			try {
				OutputStream out = socket.getOutputStream();
				if (mode == Mode.BYTE_BY_BYTE) {
					for (byte b : request) {
						out.write(b);
						out.flush();
					}
				}
				else if (mode != Mode.SILENT) {
					out.write(request);
					out.flush();
				}
				if (mode == Mode.HALF_CLOSE) {
					socket.shutdownOutput();
				}
			}
			catch (IOException e) {
				// The server answered early (413, 431, ...) and closed: what it sent may still be readable.
				writeFailed = true;
			}
			return read(socket.getInputStream(), writeFailed);
		}
		catch (IOException e) {
			throw new UncheckedIOException("cannot connect to 127.0.0.1:" + port, e);
		}
	}

	private static Answer read(InputStream in, boolean writeFailed) {
		ByteArrayOutputStream answer = new ByteArrayOutputStream();
		byte[] buffer = new byte[8192];
		boolean reset = false;
		boolean hung = false;
		try {
			for (int n; (n = in.read(buffer)) >= 0 && answer.size() < MAX_ANSWER_BYTES;) {
				answer.write(buffer, 0, n);
			}
		}
		catch (SocketTimeoutException e) {
			hung = true;
		}
		catch (IOException e) {
			reset = true;
		}
		byte[] bytes = answer.toByteArray();
		return new Answer(status(bytes), bytes, writeFailed, reset, hung);
	}

	/**
	 * @return the final status of a {@code HTTP/x.y SSS ...} answer (Netty echoes odd request versions), past any
	 *         interim {@code 1xx} (100 Continue); 0 when the bytes are not HTTP
	 */
	private static int status(byte[] bytes) {
		String text = new String(bytes, StandardCharsets.ISO_8859_1);
		for (int start = 0;;) {
			int space = text.indexOf(' ', start);
			if (!text.startsWith("HTTP/", start) || space < 0 || text.length() < space + 4) {
				return 0;
			}
			int status;
			try {
				status = Integer.parseInt(text.substring(space + 1, space + 4));
			}
			catch (NumberFormatException e) {
				return 0;
			}
			int end = text.indexOf("\r\n\r\n", start);
			if (status >= 200 || end < 0) {
				return status;
			}
			start = end + 4;
		}
	}
}
