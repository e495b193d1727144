package io.kvferry.bootstrap.server.internal;

import java.nio.charset.StandardCharsets;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class RegistrationTest {

	@Test
	void parsesTheSeedsBody() {
		Registration r = parse("{\"role\": \"Prefill\", \"attn_tp_size\": 4, \"attn_tp_rank\": 3, \"attn_dp_size\": 2, "
				+ "\"attn_dp_rank\": 1, \"pp_size\": 2, \"pp_rank\": 1, \"system_dp_size\": 1, \"system_dp_rank\": 1, "
				+ "\"rank_ip\": \"10.0.0.7\", \"rank_port\": 40000, \"page_size\": 32}");
		assertThat(r.isPrefill()).isTrue();
		assertThat(r.dpSize()).isEqualTo(2);
		assertThat(r.dpGroup()).isEqualTo(1);
		assertThat(r.dpGroupField()).isEqualTo("attn_dp_rank");
		assertThat(r.key()).isEqualTo(new RankKey(1, 0, 3, 1));
		assertThat(r.endpoint()).isEqualTo(new RankEndpoint("10.0.0.7", 40000));
		assertThat(r.topology()).isEqualTo(new PrefillTopology(4, 1, 2, 2, 32, null, true));
	}

	@Test
	void usesTheSystemDpRankWithoutDpAttention() {
		Registration r = parse("{\"attn_tp_size\": 2, \"attn_tp_rank\": 0, \"attn_dp_size\": 1, \"attn_dp_rank\": 0, "
				+ "\"pp_size\": 1, \"pp_rank\": 0, \"system_dp_size\": 4, \"system_dp_rank\": 3, "
				+ "\"rank_ip\": \"h\", \"rank_port\": 1, \"page_size\": 1}");
		assertThat(r.role()).isEqualTo(Registration.PREFILL);
		assertThat(r.dpSize()).isEqualTo(4);
		assertThat(r.dpGroup()).isEqualTo(3);
		assertThat(r.dpGroupField()).isEqualTo("system_dp_rank");
	}

	@Test
	void acceptsAnySystemDpRankWithDpAttention() {
		// With DP attention SGLang may send the scheduler's DP rank although system_dp_size is 1.
		Registration r = parse("{\"attn_tp_size\": 1, \"attn_tp_rank\": 0, \"attn_dp_size\": 4, \"attn_dp_rank\": 2, "
				+ "\"pp_size\": 1, \"pp_rank\": 0, \"system_dp_size\": 1, \"system_dp_rank\": 2, "
				+ "\"rank_ip\": \"h\", \"rank_port\": 1, \"page_size\": 1}");
		assertThat(r.dpGroup()).isEqualTo(2);
	}

	@Test
	void parsesTodaysOptionalFields() {
		Registration r = parse("{\"attn_tp_size\": 1, \"attn_tp_rank\": 0, \"attn_cp_size\": 4, \"attn_cp_rank\": 3, "
				+ "\"attn_dp_size\": 1, \"attn_dp_rank\": 0, \"pp_size\": 1, \"pp_rank\": 0, \"system_dp_size\": 1, "
				+ "\"system_dp_rank\": 0, \"rank_ip\": \"h\", \"rank_port\": 1, \"page_size\": 1, "
				+ "\"kv_cache_dtype\": \"auto\", \"load_balance_method\": \"round_robin\", \"prefill_http_port\": 1}");
		assertThat(r.key()).isEqualTo(new RankKey(0, 3, 0, 0));
		assertThat(r.topology()).isEqualTo(new PrefillTopology(1, 4, 1, 1, 1, "auto", false));
	}

	@Test
	void namesTheFirstBadField() {
		assertThatThrownBy(() -> parse("{}")).isInstanceOfSatisfying(RequestException.class,
				e -> assertThat(e.status()).isEqualTo(400)).hasMessage("attn_tp_size : missing (expected: an integer)");
		assertThatThrownBy(() -> parse("{\"role\": 1}")).hasMessage("role : 1 (expected: a string)");
		assertThatThrownBy(() -> parse("{\"attn_tp_size\": 2, \"attn_tp_rank\": \"x\"}"))
				.hasMessage("attn_tp_rank : \"x\" (expected: an integer)");
		assertThatThrownBy(() -> parse("{\"attn_tp_size\": 2, \"attn_tp_rank\": 2}"))
				.hasMessage("attn_tp_rank : 2 (expected: 0..1 for attn_tp_size 2)");
		assertThatThrownBy(() -> parse("{\"attn_tp_size\": 1, \"attn_tp_rank\": 0, \"attn_cp_size\": 0}"))
				.hasMessage("attn_cp_size : 0 (expected: 1..65536)");
	}

	@Test
	void rejectsRankIpsWithWhitespace() {
		assertThatThrownBy(() -> parse("{\"attn_tp_size\": 1, \"attn_tp_rank\": 0, \"attn_dp_size\": 1, "
				+ "\"attn_dp_rank\": 0, \"pp_size\": 1, \"pp_rank\": 0, \"system_dp_size\": 1, \"system_dp_rank\": 0, "
				+ "\"rank_ip\": \"10.0.0.1 evil\", \"rank_port\": 1, \"page_size\": 1}"))
				.hasMessageStartingWith("rank_ip : ");
	}

	private static Registration parse(String json) {
		return Registration.parse(Json.readObject(json.getBytes(StandardCharsets.UTF_8)));
	}
}
