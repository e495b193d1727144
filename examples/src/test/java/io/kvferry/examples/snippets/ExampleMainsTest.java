package io.kvferry.examples.snippets;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

import io.kvferry.test.Child;
import io.netty.pkitesting.X509Bundle;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Each example's {@code main} in a JVM of its own, as a reader would run it: it prints its outcome and the JVM exits
 * by itself with status 0 (no thread it left keeps the JVM alive).
 */
@Timeout(120)
class ExampleMainsTest {

	private static final Duration EXIT = Duration.ofSeconds(90);

	@ParameterizedTest(name = "{0}")
	@ValueSource(classes = { FirstRoom.class, WatchStates.class, ChunkedSends.class, AbortFromDecode.class,
			RoomMetrics.class, EmbeddedBootstrap.class, SecondTurn.class,
			EncoderToPrefill.class })
	void mainPrintsItsOutcomeAndExitsByItself(Class<?> example) throws Exception {
		try (Child child = Child.startMain(example.getSimpleName(), example)) {
			assertThat(child.awaitExit(EXIT)).as(child.output()).isZero();
			assertThat(child.stdout()).as(child.output()).containsPattern(outcome(example));
		}
	}

	@Test
	void tlsMainReadsAPemCertificateAndKey(@TempDir Path dir) throws Exception {
		X509Bundle node = ExamplesTest.selfSigned();
		Path certificate = Files.writeString(dir.resolve("node.pem"), node.getCertificatePEM());
		Path key = Files.writeString(dir.resolve("node.key"), node.getPrivateKeyPEM());

		try (Child child = Child.startMain("TlsAndSecret", TlsAndSecret.class, certificate.toString(),
				key.toString())) {
			assertThat(child.awaitExit(EXIT)).as(child.output()).isZero();
			assertThat(child.stdout()).contains("room 9 over TLS with a shared secret: arrived intact");
		}
	}

	private static String outcome(Class<?> example) {
		if (example == FirstRoom.class) {
			return "room 1: 4 pages and the aux row arrived intact";
		}
		if (example == EncoderToPrefill.class) {
			return "room 42: 3 tensors arrived intact, manifest matches";
		}
		if (example == SecondTurn.class) {
			return "turn one on B: intact; turn two back on A: intact";
		}
		if (example == WatchStates.class) {
			return "decode states: +\\[BOOTSTRAPPING, .*SUCCESS\\]";
		}
		if (example == ChunkedSends.class) {
			return "after the last: 6 pages and the aux row arrived intact";
		}
		if (example == AbortFromDecode.class) {
			return "prefill saw: ABORTED \\(.*request cancelled by the client.*\\), state FAILED";
		}
		if (example == RoomMetrics.class) {
			return "kvferry.bytes.received " + Cache.roomBytes(4);
		}
		return "2 prefill ranks registered; .* TP rank 1 at (\\S+) \\(listening on \\1\\)";
	}
}
