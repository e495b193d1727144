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

	@Test
	void theManyRowShowsTheRoomsAgainstTheFramePumpAndTheEventLoopRoomPump() throws Exception {
		ObjectNode result = (ObjectNode) BenchCommand.JSON.readTree("""
				{"many": {"rooms": 1000, "gbps": 2.08, "baseline_gbps": 3.73, "ratio": 0.558, "rooms_per_second": 3000,
				          "frames": 40160, "failures": 0, "seconds": 0.32, "cpu_cores": 1.9,
				          "loop_verdict_laid_out_gbps": 3.33, "loop_verdict_gbps": 2.58, "loop_verdict_ratio": 0.693,
				          "ratio_to_loop_verdict": 0.805}}
				""");
		String table = BenchTable.render(result, ModelShape.llama3_8b(), true);
		assertThat(table).containsPattern("(?m)^  many 1000 rooms 2<->2 +2\\.08 GB/s +3\\.73 GB/s +0\\.56   "
				+ "\\(frame pump: the same frames, 2 connections\\)$");
		assertThat(table).containsPattern("(?m)^ +2\\.08 GB/s +2\\.58 GB/s +0\\.81   \\(event-loop room pump on the "
				+ "rooms' pages: 0\\.69 of the frame pump; 3\\.33 GB/s on its buffers\\)$");
	}
}
