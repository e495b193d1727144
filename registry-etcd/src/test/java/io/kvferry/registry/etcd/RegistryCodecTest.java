package io.kvferry.registry.etcd;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvferry.HostPort;
import io.kvferry.bootstrap.BootstrapFields;
import io.kvferry.bootstrap.PrefillSizes;
import io.kvferry.bootstrap.RankRoute;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The registry stores and reads back every field core's {@link BootstrapFields} gives an instance's sizes and a
 * rank's endpoint, and reads the sizes out of a whole parallel-info answer, as a bootstrap server stores it. A size
 * field added to the schema and missed here fails these tests.
 */
class RegistryCodecTest {

	private static final ObjectMapper JSON = new ObjectMapper();

	/** Every size distinct and none 1, so that a size read from the wrong key shows. */
	private static final PrefillSizes SIZES = new PrefillSizes(4, 2, 3, 5, 16);

	@Test
	void storedSizesHoldEverySizeField() throws Exception {
		byte[] stored = RegistryCodec.sizesJson(SIZES);
		List<String> names = new ArrayList<>();
		JSON.readTree(stored).fieldNames().forEachRemaining(names::add);
		assertThat(names).containsExactlyElementsOf(BootstrapFields.SIZES);
		assertThat(RegistryCodec.readSizes(stored)).isEqualTo(SIZES);
	}

	@Test
	void everySizeFieldIsRead() throws Exception {
		ObjectNode stored = (ObjectNode) JSON.readTree(RegistryCodec.sizesJson(SIZES));
		PrefillSizes read = RegistryCodec.readSizes(JSON.writeValueAsBytes(stored));
		List<String> unread = new ArrayList<>();
		for (String field : BootstrapFields.SIZES) {
			ObjectNode changed = stored.deepCopy();
			changed.put(field, stored.get(field).intValue() + 1);
			if (RegistryCodec.readSizes(JSON.writeValueAsBytes(changed)).equals(read)) {
				unread.add(field);
			}
		}
		assertThat(unread).as("size fields the registry reads the same whatever their value").isEmpty();
	}

	@Test
	void sizesAreReadFromAWholeParallelInfoAnswer() throws Exception {
		// As a bootstrap server stores the instance: today's answer, scratch fields and a passed-through field.
		Map<String, Object> answer = new LinkedHashMap<>(BootstrapFields.sizes(SIZES));
		answer.put(BootstrapFields.KV_CACHE_DTYPE, "fp8_e4m3");
		answer.put(BootstrapFields.FOLLOW_BOOTSTRAP_ROOM, true);
		answer.put(BootstrapFields.ENABLE_DSA_CACHE_LAYER_SPLIT, false);
		answer.put(BootstrapFields.PREFILL_HTTP_PORT, 30000);
		answer.put(BootstrapFields.ALL_CP_RANKS_TRANSFER, true);
		BootstrapFields.PARALLEL_INFO_SCRATCH.forEach(field -> answer.put(field, null));
		assertThat(answer.keySet()).containsAll(BootstrapFields.PARALLEL_INFO);
		assertThat(RegistryCodec.readSizes(JSON.writeValueAsBytes(answer))).isEqualTo(SIZES);
	}

	@Test
	void aRankValueHoldsEveryEndpointField() throws Exception {
		byte[] stored = RegistryCodec.endpointJson("10.0.0.7", 17001);
		List<String> names = new ArrayList<>();
		JSON.readTree(stored).fieldNames().forEachRemaining(names::add);
		assertThat(names).containsExactlyElementsOf(BootstrapFields.ENDPOINT);
		assertThat(RegistryCodec.readEndpoint(stored)).isEqualTo(new HostPort("10.0.0.7", 17001));
		for (String field : BootstrapFields.ENDPOINT) {
			ObjectNode without = (ObjectNode) JSON.readTree(stored);
			without.remove(field);
			assertThatThrownBy(() -> RegistryCodec.readEndpoint(JSON.writeValueAsBytes(without)))
					.as("the registry reads %s", field)
					.isInstanceOf(IllegalArgumentException.class);
		}
	}

	@Test
	void aRankValueKeepsTheIncarnationItWasRegisteredWith() throws Exception {
		byte[] stored = RegistryCodec.endpointJson("10.0.0.7", 17001, 0xabcdefL);
		assertThat(JSON.readTree(stored).get(BootstrapFields.INCARNATION).textValue()).isEqualTo("0000000000abcdef");
		assertThat(RegistryCodec.readRoute(stored)).isEqualTo(new RankRoute(new HostPort("10.0.0.7", 17001), 0xabcdefL));
		// A value written without one (an older release, SGLang's fields only) reads as unknown.
		assertThat(RegistryCodec.readRoute(RegistryCodec.endpointJson("10.0.0.7", 17001)))
				.isEqualTo(RankRoute.of(new HostPort("10.0.0.7", 17001)));
		assertThat(RegistryCodec.endpointJson("10.0.0.7", 17001, 0)).isEqualTo(RegistryCodec.endpointJson("10.0.0.7",
				17001));
		ObjectNode bad = (ObjectNode) JSON.readTree(stored);
		bad.put(BootstrapFields.INCARNATION, 12);
		assertThatThrownBy(() -> RegistryCodec.readRoute(JSON.writeValueAsBytes(bad)))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining(BootstrapFields.INCARNATION);
	}

	@Test
	void aRankValueKeepsTheEndpointsOfItsFurtherInterfaces() throws Exception {
		List<HostPort> more = List.of(new HostPort("10.0.1.7", 17001), new HostPort("fd00::7", 17001));
		byte[] stored = RegistryCodec.endpointJson("10.0.0.7", 17001, 5, more);
		assertThat(JSON.readTree(stored).get(BootstrapFields.MORE_ENDPOINTS).textValue())
				.isEqualTo("10.0.1.7:17001,[fd00::7]:17001");
		assertThat(RegistryCodec.readRoute(stored)).isEqualTo(new RankRoute(new HostPort("10.0.0.7", 17001), 5, more));
		// None are written as no field: the value of a rank of one interface is unchanged.
		assertThat(RegistryCodec.endpointJson("10.0.0.7", 17001, 5, List.of()))
				.isEqualTo(RegistryCodec.endpointJson("10.0.0.7", 17001, 5));
		ObjectNode bad = (ObjectNode) JSON.readTree(stored);
		bad.put(BootstrapFields.MORE_ENDPOINTS, 12);
		assertThatThrownBy(() -> RegistryCodec.readRoute(JSON.writeValueAsBytes(bad)))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining(BootstrapFields.MORE_ENDPOINTS);
		bad.put(BootstrapFields.MORE_ENDPOINTS, "10.0.1.7:0");
		assertThatThrownBy(() -> RegistryCodec.readRoute(JSON.writeValueAsBytes(bad)))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining(BootstrapFields.MORE_ENDPOINTS);
	}
}
