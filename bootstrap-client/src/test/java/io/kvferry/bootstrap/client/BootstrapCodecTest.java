package io.kvferry.bootstrap.client;

import java.nio.charset.StandardCharsets;

import io.kvferry.HostPort;
import io.kvferry.ParallelLayout;
import io.kvferry.bootstrap.PrefillRegistration;
import io.kvferry.bootstrap.BootstrapException;
import io.kvferry.bootstrap.BootstrapException.Kind;
import io.kvferry.bootstrap.PrefillParallelInfo;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Decoding of bootstrap answers: the edge cases of SGLang's JSON, on byte arrays. */
class BootstrapCodecTest {

	private static final String CALL = "GET http://127.0.0.1:8998/route?engine_rank=0&target_dp_group=0";

	private static byte[] utf8(String text) {
		return text.getBytes(StandardCharsets.UTF_8);
	}

	private static void assertOther(Throwable error, String... parts) {
		assertThat(error).isInstanceOf(BootstrapException.class);
		BootstrapException failure = (BootstrapException) error;
		assertThat(failure.kind()).isEqualTo(Kind.OTHER);
		assertThat(failure.status()).isEqualTo(200);
		assertThat(failure.getMessage()).startsWith(CALL + ": ").contains(parts);
	}

	@Test
	void aRegistrationNamesCpAndItsTransferOptionsOnlyWhenItHasThem() {
		ParallelLayout cp1 = ParallelLayout.SINGLE.withAttnCp(2, 1);
		String plain = new String(BootstrapCodec.encodeRegistration(PrefillRegistration.prefill(ParallelLayout.SINGLE,
				"10.0.0.1", 17000, 16)), StandardCharsets.UTF_8);
		String cp = new String(BootstrapCodec.encodeRegistration(new PrefillRegistration(PrefillRegistration.PREFILL,
				cp1, "10.0.0.1", 17000, 16, true, true)), StandardCharsets.UTF_8);
		assertThat(plain).doesNotContain("cp").doesNotContain("dsa");
		assertThat(cp).contains("\"attn_cp_size\":2,\"attn_cp_rank\":1",
				"\"enable_dsa_cache_layer_split\":true", "\"kvferry_all_cp_ranks_transfer\":true");
	}

	@Test
	void parallelInfoReadsTheFourSizesInAnyOrder() {
		PrefillParallelInfo info = BootstrapCodec.decodeParallelInfo(CALL, utf8("{\"prefill_page_size\":64,"
				+ "\"prefill_pp_size\":4,\"prefill_dp_size\":2,\"prefill_attn_tp_size\":8}"));

		assertThat(info).isEqualTo(new PrefillParallelInfo(8, 2, 4, 64));
	}

	@ParameterizedTest
	@CsvSource(delimiter = '|', value = {
			"{\"prefill_attn_tp_size\":\"8\",\"prefill_dp_size\":1,\"prefill_pp_size\":1,\"prefill_page_size\":1}"
					+ "| 'prefill_attn_tp_size' is not an integer",
			"{\"prefill_attn_tp_size\":8,\"prefill_dp_size\":1.5,\"prefill_pp_size\":1,\"prefill_page_size\":1}"
					+ "| 'prefill_dp_size' is not an integer",
			"{\"prefill_attn_tp_size\":8,\"prefill_dp_size\":1,\"prefill_pp_size\":4294967296,\"prefill_page_size\":1}"
					+ "| 'prefill_pp_size' is not an integer",
			"{\"prefill_attn_tp_size\":0,\"prefill_dp_size\":1,\"prefill_pp_size\":1,\"prefill_page_size\":1}"
					+ "| invalid answer",
			"[1,2,3]| not a JSON object",
			"{\"prefill_attn_tp_size\":8,| not JSON",
			"''| not a JSON object",
	})
	void parallelInfoRefusesMistypedOrMalformedAnswers(String body, String expected) {
		assertThatThrownBy(() -> BootstrapCodec.decodeParallelInfo(CALL, utf8(body)))
				.satisfies(error -> assertOther(error, expected.strip()));
	}

	@Test
	void rankEndpointReadsIpv4Ipv6AndHostnames() {
		assertThat(BootstrapCodec.decodeRankEndpoint(CALL, utf8("{\"rank_ip\":\"10.0.0.1\",\"rank_port\":1}")))
				.isEqualTo(new HostPort("10.0.0.1", 1));
		assertThat(BootstrapCodec.decodeRankEndpoint(CALL, utf8("{\"rank_port\":65535,\"rank_ip\":\"fe80::1\"}")))
				.isEqualTo(new HostPort("fe80::1", 65535));
		assertThat(BootstrapCodec.decodeRankEndpoint(CALL,
				utf8("{\"rank_ip\":\"prefill-0.svc\",\"rank_port\":17000,\"is_dummy\":true}")))
				.isEqualTo(new HostPort("prefill-0.svc", 17000));
	}

	@ParameterizedTest
	@CsvSource(delimiter = '|', value = {
			"{\"rank_port\":17000}| 'rank_ip'",
			"{\"rank_ip\":null,\"rank_port\":17000}| 'rank_ip'",
			"{\"rank_ip\":42,\"rank_port\":17000}| 'rank_ip' is not a host",
			"{\"rank_ip\":\" \",\"rank_port\":17000}| 'rank_ip' is not a host",
			"{\"rank_ip\":\"10.0.0.1\"}| 'rank_port'",
			"{\"rank_ip\":\"10.0.0.1\",\"rank_port\":0}| 'rank_port' : 0 (expected: 1..65535)",
			"{\"rank_ip\":\"10.0.0.1\",\"rank_port\":70000}| 'rank_port' : 70000 (expected: 1..65535)",
			"{\"rank_ip\":\"10.0.0.1\",\"rank_port\":\"17000\"}| 'rank_port' is not an integer",
	})
	void rankEndpointRefusesMissingOrMistypedFields(String body, String expected) {
		assertThatThrownBy(() -> BootstrapCodec.decodeRankEndpoint(CALL, utf8(body)))
				.satisfies(error -> assertOther(error, expected.strip()));
	}
}
