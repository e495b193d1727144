package io.kvferry.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvferry.harness.ModelShape;
import org.junit.jupiter.api.Test;

class BenchTableTest {

	@Test
	void aSmallRowShowsTheRoomAgainstEachPingPongAndTheHeaderNamesTheCongestionControl() throws Exception {
		ObjectNode result = (ObjectNode) BenchCommand.JSON.readTree("""
				{"tcp_congestion_control": "bbr",
				 "small": {"pages": 1, "bytes": 2097152, "p50_us": 1606.3, "decode_p50_us": 1601.8,
				           "baseline_p50_us": 783.2, "loop_baseline_p50_us": 1069.2, "ratio": 2.05,
				           "decode_ratio": 2.045, "loop_ratio": 1.365, "decode_ratio_to_loop": 1.498,
				           "loop_verdict_p50_us": 1204.9, "ratio_to_loop_verdict": 1.333}}
				""");
		((ObjectNode) result.get("small")).set("ratio_spread", RoundSpread.ofLatencies(new long[] { 1600, 1610, 1620 },
				new long[] { 780, 790, 800 }, 3));
		String table = BenchTable.render(result, ModelShape.llama3_8b(), true);
		assertThat(table).containsPattern("(?m)^kvferry bench: loopback, epoll, TCP congestion control bbr, ");
		assertThat(table).containsPattern("(?m)^  small 1 page\\(s\\) p50 \\(2\\.0 MiB\\) +1606 us +783 us +2\\.05   "
				+ "\\(TCP ping-pong\\)$");
		assertThat(table).containsPattern("(?m)^    until decode completed +1602 us +1069 us +1\\.50   "
				+ "\\(event-loop ping-pong, 1\\.37 of TCP's\\)$");
		assertThat(table).containsPattern("(?m)^    until both completed +1606 us +1205 us +1\\.33   "
				+ "\\(event-loop ping-pong with a verdict\\)$");
	}
}
