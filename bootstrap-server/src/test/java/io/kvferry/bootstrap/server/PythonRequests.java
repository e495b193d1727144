package io.kvferry.bootstrap.server;

import java.io.ByteArrayOutputStream;
import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

import io.kvferry.HostPort;

/**
 * SGLang's HTTP client on the wire: Python's {@code requests} as SGLang's ranks call it, byte for byte in what matters
 * (request line, {@code Host}, its default headers in its order, a JSON body as {@code json.dumps} writes it with
 * {@code Content-Length} then {@code Content-Type}).
 * <ul>
 * <li>{@link #fresh}: {@code requests.put(..)}, {@code requests.get(..)}, {@code requests.post(..)}: a new connection
 * per call, closed once the answer is read (the module-level functions open and close a session each).</li>
 * <li>{@link #session}: a kept-alive {@code requests.Session} with one pooled connection, as decode's route look-ups,
 * {@code query_dp_ranks} and heartbeats use.</li>
 * </ul>
 * Blocking, for test threads; every read is bounded by {@link RawHttp#READ_TIMEOUT}.
 */
final class PythonRequests implements Closeable {

	/** What came back: status, {@code Content-Type} and body (the server always sends a {@code Content-Length}). */
	record Answer(int status, String contentType, String body) {
	}

	private final HostPort server;
	private final boolean keepAlive;
	private Socket socket;

	private PythonRequests(HostPort server, boolean keepAlive) {
		this.server = server;
		this.keepAlive = keepAlive;
	}

	/** @return module-level calls: one connection each */
	static PythonRequests fresh(HostPort server) {
		return new PythonRequests(server, false);
	}

	/** @return a session: one connection, kept alive across calls */
	static PythonRequests session(HostPort server) {
		return new PythonRequests(server, true);
	}

	Answer get(String pathAndQuery) {
		return exchange("GET", pathAndQuery, null);
	}

	Answer put(String path, String json) {
		return exchange("PUT", path, json);
	}

	Answer post(String path, String json) {
		return exchange("POST", path, json);
	}

	Answer delete(String path, String json) {
		return exchange("DELETE", path, json);
	}

	@Override
	public void close() throws IOException {
		if (socket != null) {
			socket.close();
			socket = null;
		}
	}

	private Answer exchange(String method, String target, String json) {
		try {
			if (socket == null) {
				socket = new Socket();
				socket.connect(new InetSocketAddress(server.host(), server.port()),
						(int) RawHttp.READ_TIMEOUT.toMillis());
				socket.setSoTimeout((int) RawHttp.READ_TIMEOUT.toMillis());
			}
			socket.getOutputStream().write(request(method, target, json));
			socket.getOutputStream().flush();
			Answer answer = read(socket.getInputStream());
			if (!keepAlive) {
				close();
			}
			return answer;
		}
		catch (IOException e) {
			throw new UncheckedIOException(method + " " + target + " to " + server, e);
		}
	}

	private byte[] request(String method, String target, String json) {
		StringBuilder head = new StringBuilder()
				.append(method).append(' ').append(target).append(" HTTP/1.1\r\n")
				.append("Host: ").append(server).append("\r\n")
				.append("User-Agent: python-requests/2.32.3\r\n")
				.append("Accept-Encoding: gzip, deflate\r\n")
				.append("Accept: */*\r\n")
				.append("Connection: keep-alive\r\n");
		byte[] body = json == null ? new byte[0] : json.getBytes(StandardCharsets.UTF_8);
		if (json != null) {
			head.append("Content-Length: ").append(body.length).append("\r\n")
					.append("Content-Type: application/json\r\n");
		}
		head.append("\r\n");
		byte[] start = head.toString().getBytes(StandardCharsets.US_ASCII);
		byte[] all = new byte[start.length + body.length];
		System.arraycopy(start, 0, all, 0, start.length);
		System.arraycopy(body, 0, all, start.length, body.length);
		return all;
	}

	private static Answer read(InputStream in) throws IOException {
		ByteArrayOutputStream head = new ByteArrayOutputStream();
		while (!head.toString(StandardCharsets.ISO_8859_1).endsWith("\r\n\r\n")) {
			int b = in.read();
			if (b < 0) {
				throw new IOException("closed before the end of the head: " + head);
			}
			head.write(b);
		}
		String[] lines = head.toString(StandardCharsets.ISO_8859_1).split("\r\n");
		int status = Integer.parseInt(lines[0].split(" ")[1]);
		String contentType = null;
		int length = -1;
		for (String line : lines) {
			String lower = line.toLowerCase(Locale.ROOT);
			if (lower.startsWith("content-type:")) {
				contentType = line.substring("content-type:".length()).trim();
			}
			else if (lower.startsWith("content-length:")) {
				length = Integer.parseInt(line.substring("content-length:".length()).trim());
			}
		}
		if (length < 0) {
			throw new IOException("no Content-Length in " + head);
		}
		byte[] body = in.readNBytes(length);
		if (body.length < length) {
			throw new IOException("closed after " + body.length + " of " + length + " body bytes");
		}
		return new Answer(status, contentType, new String(body, StandardCharsets.UTF_8));
	}
}
