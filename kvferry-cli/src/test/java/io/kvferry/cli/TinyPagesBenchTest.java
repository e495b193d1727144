package io.kvferry.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import picocli.CommandLine;

/** Runs the page-size-1 scenario in-process at toy sizes: checks what it reports, not how fast anything is. */
@Timeout(90)
class TinyPagesBenchTest {

	@Test
	void tinyPagesReportsBothLayoutsAgainstTheGatherScatterPumpWithEveryByteChecked() throws Exception {
		StringWriter out = new StringWriter();
		StringWriter err = new StringWriter();
		CommandLine cl = KVFerryCli.commandLine();
		cl.setOut(new PrintWriter(out, true));
		cl.setErr(new PrintWriter(err, true));
		int status = cl.execute("bench", "--json", "--transport", "tcp", "--tiny-only", "--layers", "2", "--tiny-rooms", "3",
				"--tiny-tokens", "256", "--tiny-rounds", "3", "--tiny-warmup", "1");
		assertThat(status).as(err.toString()).isZero();
		JsonNode j = new ObjectMapper().readTree(out.toString());
		JsonNode tiny = j.get("tiny_pages");
		for (JsonNode layout : new JsonNode[] { tiny, tiny.get("tp2") }) {
			assertThat(layout.get("rooms").asInt()).isEqualTo(3);
			assertThat(layout.get("tokens").asInt()).isBetween(3 * 64, 3 * 256);
			assertThat(layout.get("rounds").asInt()).isEqualTo(3);
			for (String key : new String[] { "gbps", "gbps_min", "gbps_max", "pump_gbps", "ratio_to_pump" }) {
				assertThat(layout.get(key).asDouble()).as(key).isPositive();
			}
			assertThat(layout.get("gbps_max").asDouble()).isGreaterThanOrEqualTo(layout.get("gbps").asDouble());
			// Without bulk in the run there is nothing to divide by.
			assertThat(layout.has("ratio_to_bulk")).isTrue();
			assertThat(layout.get("ratio_to_bulk").isNull()).isTrue();
			// Page size 1 and slots in runs of at most 4: at least a piece per 4 tokens of each layer buffer (2
			// layers, K and V) and rank pair, at most one per token.
			int tokens = layout.get("tokens").asInt();
			int pairs = layout.get("ranks").asInt();
			assertThat(layout.get("pieces").asInt()).isBetween(tokens * 4 * pairs / 4, tokens * 4 * pairs);
			// Each rank pair moves its share of the heads (8 of 128, bf16): the bytes are the same at either layout.
			assertThat(layout.get("bytes").asLong()).isEqualTo((long) tokens * 4 * 8 * 128 * 2);
		}
		assertThat(tiny.get("ranks").asInt()).isEqualTo(1);
		assertThat(tiny.get("tp2").get("ranks").asInt()).isEqualTo(2);
		assertThat(tiny.get("failures").asInt()).isZero();
		assertThat(j.has("bulk")).isFalse();
		assertThat(j.get("verified").asBoolean()).isTrue();

		StringWriter table = new StringWriter();
		cl.setOut(new PrintWriter(table, true));
		assertThat(cl.execute("bench", "--transport", "tcp", "--tiny-only", "--layers", "2", "--kv-heads", "2",
				"--head-dim", "64", "--tiny-rooms", "2", "--tiny-tokens", "16", "--tiny-rounds", "1", "--tiny-warmup", "1")).isZero();
		assertThat(table.toString()).contains("tiny pages 2 rooms 1<->1").contains("tiny pages 2 rooms 2<->2")
				.contains("gather/scatter pump").contains("OK, every byte matched");

		StringWriter refusal = new StringWriter();
		cl.setErr(new PrintWriter(refusal, true));
		assertThat(cl.execute("bench", "--tiny-only", "--many-only")).isEqualTo(2);
		assertThat(refusal.toString()).contains("--tiny-only excludes --bulk-only and --many-only");
		assertThat(cl.execute("bench", "--tiny-tokens", "2")).isEqualTo(2);
		assertThat(refusal.toString()).contains("--tiny-tokens : 2 (expected: >= 4)");
	}
}
