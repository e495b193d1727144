package io.kvferry.examples.snippets;

import java.io.File;
import java.security.SecureRandom;

import javax.net.ssl.SSLException;

import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.transport.netty.NettyKVTransport;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import reactor.core.publisher.Mono;

/**
 * One room over TLS with a shared secret: every connection runs inside TLS, and inside it each side proves it knows
 * the secret (an HMAC of the other's nonce; the secret is never sent). A peer without the certificate's trust or the
 * secret is disconnected before it reaches a room. The certificate must name the address connected to (here
 * 127.0.0.1).
 */
public final class TlsAndSecret {

	private TlsAndSecret() {
	}

	/**
	 * Moves one room of 3 pages between managers whose transport uses {@code server} and {@code client} TLS contexts
	 * and {@code secret}.
	 *
	 * @param server the context connections are accepted with (prefill's listener)
	 * @param client the context connections are opened with (decode), trusting the server's certificate
	 * @param secret the secret both sides share, at least 32 random bytes
	 * @return whether every page and the aux row arrived intact
	 */
	public static boolean run(SslContext server, SslContext client, byte[] secret) {
		// tag::tls-and-secret[]
		NettyKVTransport transport = NettyKVTransport.create()
				.secure(server, client)          // SslContextBuilder.forServer(cert, key), forClient().trustManager(ca)
				.sharedSecret(secret);           // the same bytes on every prefill and decode rank
		// end::tls-and-secret[]
		try (Pair pair = Pair.start(transport)) {
			long room = 9;
			int[] srcPages = { 7, 8, 9 };
			int[] dstPages = { 12, 13, 14 };
			Cache.fill(pair.prefillArgs, srcPages, 1, 9);
			KVReceiver receiver = pair.decode.receiver(pair.bootstrap.address(), room);
			receiver.sendMetadata(dstPages, 2, new int[0]);
			KVSender sender = pair.prefill.sender(room);
			sender.init(srcPages.length, 1);
			sender.send(srcPages, new int[0]);
			Mono.when(sender.completion(), receiver.completion()).block(Pair.TIMEOUT);
			return Cache.same(pair.prefillArgs, srcPages, 1, pair.decodeArgs, dstPages, 2);
		}
	}

	/**
	 * Runs the example with a PEM certificate (whose subject alternative names include 127.0.0.1) and its key; both
	 * sides trust that certificate, and the secret is 32 random bytes.
	 *
	 * @param args the certificate file and the private key file (PKCS#8 PEM)
	 * @throws SSLException when the files cannot be read as a certificate and key
	 */
	public static void main(String[] args) throws SSLException {
		if (args.length != 2) {
			System.err.println("usage: TlsAndSecret <certificate.pem> <private-key.pem>");
			System.exit(2);
		}
		File certificate = new File(args[0]);
		SslContext server = SslContextBuilder.forServer(certificate, new File(args[1])).build();
		SslContext client = SslContextBuilder.forClient().trustManager(certificate).build();
		byte[] secret = new byte[32];
		new SecureRandom().nextBytes(secret);
		boolean intact = run(server, client, secret);
		System.out.println("room 9 over TLS with a shared secret: " + (intact ? "arrived intact" : "bytes differ"));
		if (!intact) {
			System.exit(1);
		}
	}
}
