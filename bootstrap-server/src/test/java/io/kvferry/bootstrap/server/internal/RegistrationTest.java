package io.kvferry.bootstrap.server.internal;

import java.nio.charset.StandardCharsets;
import java.util.Map;

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
		assertThat(r.topology()).isEqualTo(new PrefillTopology(4, 1, 2, 2, 32, null, true, false, null, Map.of()));
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
		assertThat(r.topology()).isEqualTo(new PrefillTopology(1, 4, 1, 1, 1, "auto", false, false, 1, Map.of()));
	}

	@Test
	void readsTheNewestInstanceFieldsAndKeepsUnknownInstanceFieldsAsSent() {
		Registration r = parse("{\"attn_tp_size\": 1, \"attn_tp_rank\": 0, \"attn_cp_size\": 2, \"attn_cp_rank\": 1, "
				+ "\"attn_dp_size\": 1, \"attn_dp_rank\": 0, \"pp_size\": 1, \"pp_rank\": 0, \"system_dp_size\": 1, "
				+ "\"system_dp_rank\": 0, \"rank_ip\": \"h\", \"rank_port\": 1, \"page_size\": 1, "
				+ "\"kv_cache_dtype\": \"auto\", \"load_balance_method\": \"follow_bootstrap_room\", "
				+ "\"enable_dsa_cache_layer_split\": true, \"prefill_http_port\": \"30000\", "
				+ "\"attn_dcp_size\": 2, \"model_revision\": \"abc\", \"extra\": {\"a\": [1, 2.5, null]}, "
				+ "\"attn_dcp_rank\": 1, \"rank_hostname\": \"node-3\", \"dp_size\": 99, \"target_tp_rank\": 0}");
		PrefillTopology topology = r.topology();
		assertThat(topology.followBootstrapRoom()).isTrue();
		assertThat(topology.enableDsaCacheLayerSplit()).isTrue();
		assertThat(topology.prefillHttpPort()).isEqualTo(30000);
		// Per-rank by name (…_rank, rank_…) and fields the answer computes itself are not passed through.
		assertThat(topology.passedThrough()).containsOnlyKeys("attn_dcp_size", "model_revision", "extra");
		assertThat(topology.passedThrough().keySet()).containsExactly("attn_dcp_size", "model_revision", "extra");
		assertThat(topology.passedThrough().get("extra").toString()).isEqualTo("{\"a\":[1,2.5,null]}");
	}

	@Test
	void readsTheLoadBalanceMethodAsSglangsServerDoes() {
		String base = "{\"attn_tp_size\": 1, \"attn_tp_rank\": 0, \"attn_dp_size\": 1, \"attn_dp_rank\": 0, "
				+ "\"pp_size\": 1, \"pp_rank\": 0, \"system_dp_size\": 1, \"system_dp_rank\": 0, \"rank_ip\": \"h\", "
				+ "\"rank_port\": 1, \"page_size\": 1";
		assertThat(parse(base + "}").followBootstrapRoom()).isTrue();
		assertThat(parse(base + ", \"load_balance_method\": \"follow_bootstrap_room\"}").followBootstrapRoom())
				.isTrue();
		assertThat(parse(base + ", \"load_balance_method\": \"round_robin\"}").followBootstrapRoom()).isFalse();
		// SGLang compares the value it got, null included, with "follow_bootstrap_room".
		assertThat(parse(base + ", \"load_balance_method\": null}").followBootstrapRoom()).isFalse();
		assertThat(parse(base + ", \"enable_dsa_cache_layer_split\": null}").enableDsaCacheLayerSplit()).isFalse();
		assertThat(parse(base + ", \"prefill_http_port\": null}").prefillHttpPort()).isNull();
		assertThatThrownBy(() -> parse(base + ", \"enable_dsa_cache_layer_split\": \"yes\"}"))
				.hasMessage("enable_dsa_cache_layer_split : \"yes\" (expected: true or false)");
		assertThatThrownBy(() -> parse(base + ", \"prefill_http_port\": \"http\"}"))
				.hasMessage("prefill_http_port : \"http\" (expected: an integer)");
		assertThatThrownBy(() -> parse(base + ", \"prefill_http_port\": 0}"))
				.hasMessage("prefill_http_port : 0 (expected: 1..65535)");
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
