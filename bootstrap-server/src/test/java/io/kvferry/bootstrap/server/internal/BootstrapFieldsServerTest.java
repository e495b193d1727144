package io.kvferry.bootstrap.server.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Function;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvferry.bootstrap.BootstrapFields;
import org.junit.jupiter.api.Test;

/**
 * The server reads and writes every field core's {@link BootstrapFields} names: a field added there and missed here
 * (not read from a registration, not written to or read from a parallel-info answer) fails these tests.
 */
class BootstrapFieldsServerTest {

	/** One valid value per registration field; a field of the schema without a value here fails the first test. */
	private static final Map<String, Object> REGISTRATION_SAMPLE = sample(
			BootstrapFields.ROLE, "Prefill",
			BootstrapFields.ATTN_TP_SIZE, 4,
			BootstrapFields.ATTN_TP_RANK, 1,
			BootstrapFields.ATTN_CP_SIZE, 2,
			BootstrapFields.ATTN_CP_RANK, 1,
			BootstrapFields.ATTN_DP_SIZE, 2,
			BootstrapFields.ATTN_DP_RANK, 1,
			BootstrapFields.PP_SIZE, 3,
			BootstrapFields.PP_RANK, 2,
			BootstrapFields.SYSTEM_DP_SIZE, 1,
			BootstrapFields.SYSTEM_DP_RANK, 0,
			BootstrapFields.RANK_IP, "10.0.0.7",
			BootstrapFields.RANK_PORT, 17000,
			BootstrapFields.PAGE_SIZE, 16,
			BootstrapFields.KV_CACHE_DTYPE, "fp8_e4m3",
			BootstrapFields.LOAD_BALANCE_METHOD, "round_robin",
			BootstrapFields.ENABLE_DSA_CACHE_LAYER_SPLIT, true,
			BootstrapFields.PREFILL_HTTP_PORT, 30000,
			BootstrapFields.INCARNATION, "00000000000000ab",
			BootstrapFields.MORE_ENDPOINTS, "10.0.1.7:17000,10.0.2.7:17000");

	@Test
	void theSampleCoversEveryRegistrationField() {
		assertThat(REGISTRATION_SAMPLE.keySet()).containsExactlyElementsOf(BootstrapFields.REGISTRATION);
	}

	@Test
	void everyRegistrationFieldIsReadByTheServer() {
		ObjectNode body = Json.MAPPER.valueToTree(REGISTRATION_SAMPLE);
		Registration parsed = Registration.parse(body);
		assertThat(parsed.instanceFields()).as("no schema field is passed through unread").isEmpty();
		List<String> unread = unread(BootstrapFields.REGISTRATION, body, Registration::parse);
		assertThat(unread).as("registration fields the server parses the same whether present, absent or changed")
				.isEmpty();
	}

	@Test
	void todaysParallelInfoAnswerHasEveryFieldInSglangsOrder() {
		Map<String, Object> answer = topology().toJson();
		List<String> expected = new ArrayList<>(BootstrapFields.PARALLEL_INFO);
		expected.addAll(BootstrapFields.PARALLEL_INFO_SCRATCH);
		assertThat(answer.keySet()).containsExactlyElementsOf(expected);
		BootstrapFields.PARALLEL_INFO_SCRATCH.forEach(field -> assertThat(answer.get(field)).isNull());
	}

	@Test
	void everyParallelInfoFieldIsReadBackFromAStoredAnswer() {
		PrefillTopology topology = topology();
		ObjectNode stored = (ObjectNode) Json.MAPPER.valueToTree(topology.toJson());
		assertThat(PrefillTopology.fromJson(stored)).isEqualTo(topology);
		List<String> unread = unread(BootstrapFields.PARALLEL_INFO, stored, PrefillTopology::fromJson);
		assertThat(unread).as("parallel-info fields a stored answer loses").isEmpty();
	}

	@Test
	void theOlderAnswerAndTheEndpointHaveEveryField() {
		assertThat(topology().toLegacyJson().keySet()).containsExactlyElementsOf(
				BootstrapFields.LEGACY_PARALLEL_INFO);
		assertThat(new RankEndpoint("10.0.0.7", 17000).toJson().keySet()).containsExactlyElementsOf(
				BootstrapFields.ENDPOINT);
		// An incarnation goes after SGLang's two fields, which SGLang's decode reads by name.
		assertThat(new RankEndpoint("10.0.0.7", 17000, 0xabL).toJson()).containsExactly(
				Map.entry(BootstrapFields.RANK_IP, "10.0.0.7"), Map.entry(BootstrapFields.RANK_PORT, 17000),
				Map.entry(BootstrapFields.INCARNATION, "00000000000000ab"));
		// Further interfaces' endpoints go last, read by kvferry's decode alone.
		assertThat(Registration.parse(Json.MAPPER.valueToTree(REGISTRATION_SAMPLE)).endpoint().toJson())
				.containsExactly(Map.entry(BootstrapFields.RANK_IP, "10.0.0.7"),
						Map.entry(BootstrapFields.RANK_PORT, 17000),
						Map.entry(BootstrapFields.INCARNATION, "00000000000000ab"),
						Map.entry(BootstrapFields.MORE_ENDPOINTS, "10.0.1.7:17000,10.0.2.7:17000"));
	}

	/** Distinct values in every field, none a default, so a field read from the wrong key shows. */
	private static PrefillTopology topology() {
		return new PrefillTopology(4, 2, 3, 5, 16, "fp8_e4m3", true, true, 30000, Map.of());
	}

	/**
	 * @return the fields whose absence and whose changed value both leave {@code read}'s result as it was: the
	 *         fields {@code read} ignores
	 */
	private static <T> List<String> unread(List<String> fields, ObjectNode object, Function<JsonNode, T> read) {
		Object original = outcome(read, object);
		List<String> unread = new ArrayList<>();
		for (String field : fields) {
			ObjectNode absent = object.deepCopy();
			absent.remove(field);
			ObjectNode changed = object.deepCopy();
			changed.set(field, changedValue(object.get(field)));
			if (Objects.equals(outcome(read, absent), original) && Objects.equals(outcome(read, changed), original)) {
				unread.add(field);
			}
		}
		return unread;
	}

	private static JsonNode changedValue(JsonNode value) {
		if (value.isInt()) {
			return Json.MAPPER.getNodeFactory().numberNode(value.intValue() + 1);
		}
		if (value.isBoolean()) {
			return Json.MAPPER.getNodeFactory().booleanNode(!value.booleanValue());
		}
		return Json.MAPPER.getNodeFactory().textNode(value.asText() + "x");
	}

	/** @return what {@code read} made of {@code object}, or the status it refused it with */
	private static Object outcome(Function<JsonNode, ?> read, ObjectNode object) {
		try {
			return read.apply(object);
		}
		catch (RequestException e) {
			return "refused " + e.status() + ": " + e.getMessage();
		}
	}

	private static Map<String, Object> sample(Object... namesAndValues) {
		Map<String, Object> sample = new LinkedHashMap<>();
		for (int i = 0; i < namesAndValues.length; i += 2) {
			sample.put((String) namesAndValues[i], namesAndValues[i + 1]);
		}
		return sample;
	}
}
