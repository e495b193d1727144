package io.kvferry.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine;

/**
 * {@code kvferry decode --synthetic}: decode's own managers against an in-process synthetic prefill instance, no
 * bootstrap server and no prefill process; every byte of every room is checked against the pattern, as against a real
 * prefill instance.
 */
@Timeout(120)
class SyntheticDecodeTest {

	private static final ObjectMapper JSON = new ObjectMapper();
	private static final String[] SHAPE = { "--layers", "2", "--kv-heads", "2", "--head-dim", "64", "--page-size",
			"16", "--min-tokens", "16", "--max-tokens", "512", "--concurrency", "3", "--json" };

	private final StringWriter out = new StringWriter();
	private final StringWriter err = new StringWriter();

	private int decode(String... args) {
		CommandLine cl = KVFerryCli.commandLine();
		cl.setOut(new PrintWriter(out, true));
		cl.setErr(new PrintWriter(err, true));
		String[] all = new String[1 + args.length];
		all[0] = "decode";
		System.arraycopy(args, 0, all, 1, args.length);
		return cl.execute(all);
	}

	private static String[] with(String... args) {
		String[] all = new String[args.length + SHAPE.length];
		System.arraycopy(args, 0, all, 0, args.length);
		System.arraycopy(SHAPE, 0, all, args.length, SHAPE.length);
		return all;
	}

	@ParameterizedTest(name = "decode TP {0}")
	@ValueSource(ints = { 1, 2 })
	void everyRoomOfASyntheticInstanceIsVerifiedWithoutAPrefillProcess(int tp) throws Exception {
		int status = decode(with("--synthetic", "--requests", "12", "--decode-tp", "" + tp, "--stripes", "2"));

		assertThat(status).as(err.toString()).isZero();
		JsonNode j = JSON.readTree(out.toString());
		assertThat(j.get("verified").asBoolean()).isTrue();
		assertThat(j.get("requests").asInt()).isEqualTo(12);
		assertThat(j.get("completed").asInt()).isEqualTo(12);
		assertThat(j.get("failures").asInt()).isZero();
		assertThat(j.get("bytes").asLong()).isPositive();
		assertThat(j.get("transport").asText()).isEqualTo("synthetic prefill in-process, unlimited rate");
		// Decode's own states: the rooms bootstrapped, waited for their first byte and landed, as against a peer.
		assertThat(j.get("phases").has("wire")).isTrue();
	}

	@Test
	void roomsAfterAReregistrationLandInTheNewPoolsAndAreVerifiedThere() throws Exception {
		int status = decode(with("--synthetic", "--requests", "8", "--decode-tp", "2", "--warmup", "2",
				"--reregister"));

		assertThat(status).as(err.toString()).isZero();
		assertThat(err.toString()).containsPattern("kvferry decode: re-registered the regions of 2 ranks in "
				+ "[0-9]+\\.[0-9]{2} ms");
		JsonNode j = JSON.readTree(out.toString());
		assertThat(j.get("verified").asBoolean()).isTrue();
		assertThat(j.get("completed").asInt()).isEqualTo(8);
		assertThat(j.get("failures").asInt()).isZero();
	}

	@Test
	void aRatedInstanceNamesItsRate() throws Exception {
		int status = decode(with("--synthetic", "--rate", "2.5", "--requests", "4"));

		assertThat(status).as(err.toString()).isZero();
		JsonNode j = JSON.readTree(out.toString());
		assertThat(j.get("verified").asBoolean()).isTrue();
		assertThat(j.get("transport").asText()).isEqualTo("synthetic prefill in-process, 2.5 GB/s");
	}

	@Test
	void usageErrorsNameTheOption() {
		assertThat(decode("--synthetic", "--bootstrap", "10.0.0.5:8998")).isEqualTo(2);
		assertThat(err.toString()).contains("--synthetic : with --bootstrap or --registry");
		assertThat(decode("--bootstrap", "10.0.0.5:8998", "--rate", "1")).isEqualTo(2);
		assertThat(err.toString()).contains("--rate : 1.0 without --synthetic");
		assertThat(decode("--synthetic", "--rate", "-1")).isEqualTo(2);
		assertThat(err.toString()).contains("--rate : -1.0 (expected: GB/s >= 0, 0 for unlimited)");
		assertThat(decode()).isEqualTo(2);
		assertThat(err.toString()).contains("Missing required option: '--bootstrap=HOST:PORT' (or --synthetic)");
	}
}
