package io.kvferry.bootstrap.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvferry.HostPort;
import io.kvferry.ParallelLayout;
import io.kvferry.bootstrap.BootstrapException;
import io.kvferry.bootstrap.BootstrapFields;
import io.kvferry.bootstrap.PrefillParallelInfo;
import io.kvferry.bootstrap.PrefillRegistration;
import io.kvferry.bootstrap.RankRoute;
import io.kvferry.bootstrap.server.internal.Json;
import io.kvferry.bootstrap.server.internal.PrefillTopology;
import io.kvferry.bootstrap.server.internal.RankEndpoint;
import io.kvferry.bootstrap.server.internal.Registration;
import org.junit.jupiter.api.Test;

/**
 * Every field of the bootstrap schema crosses from this client's encoder to the server's decoder and back: what a
 * registration holds arrives at the server, and every field the server answers is read here. A field that one side
 * writes and the other misses fails these tests.
 */
class BootstrapFieldsRoundTripTest {

	/** Every value distinct and none a default, so that a field read from the wrong key shows. */
	private static final PrefillRegistration EVERY_OPTION = new PrefillRegistration(PrefillRegistration.PREFILL,
			new ParallelLayout(4, 3, 1, 0, 2, 1, 3, 2, 2, 1), "10.0.0.7", 17001, 32, true, true, 0x0123456789abcdefL,
			List.of(new HostPort("10.0.1.7", 17001), new HostPort("fd00::7", 17002)));

	@Test
	void everythingARegistrationHoldsReachesTheServer() throws Exception {
		JsonNode body = Json.readObject(BootstrapCodec.encodeRegistration(EVERY_OPTION));
		Registration parsed = Registration.parse(body);
		ParallelLayout layout = EVERY_OPTION.layout();

		assertThat(parsed.role()).isEqualTo(EVERY_OPTION.role());
		assertThat(List.of(parsed.attnTpSize(), parsed.attnTpRank(), parsed.attnCpSize(), parsed.attnCpRank(),
				parsed.attnDpSize(), parsed.attnDpRank(), parsed.ppSize(), parsed.ppRank(), parsed.systemDpSize(),
				parsed.systemDpRank())).containsExactly(layout.attnTpSize(), layout.attnTpRank(), layout.attnCpSize(),
						layout.attnCpRank(), layout.attnDpSize(), layout.attnDpRank(), layout.ppSize(),
						layout.ppRank(), layout.systemDpSize(), layout.systemDpRank());
		assertThat(parsed.endpoint()).isEqualTo(new RankEndpoint(EVERY_OPTION.rankIp(), EVERY_OPTION.rankPort(),
				EVERY_OPTION.incarnation(), EVERY_OPTION.moreEndpoints()));
		assertThat(parsed.pageSize()).isEqualTo(EVERY_OPTION.pageSize());
		assertThat(parsed.enableDsaCacheLayerSplit()).isEqualTo(EVERY_OPTION.dsaCacheLayerSplit());
		assertThat(parsed.dpGroup()).isEqualTo(layout.dpGroup());
		// kvferry's own field is the one the server does not read: it passes through to the parallel-info answer.
		assertThat(parsed.instanceFields()).containsOnlyKeys(BootstrapFields.ALL_CP_RANKS_TRANSFER);
		assertThat(parsed.topology().toJson()).containsEntry(BootstrapFields.ALL_CP_RANKS_TRANSFER,
				Json.MAPPER.getNodeFactory().booleanNode(true));
	}

	@Test
	void theRoundTripAboveChecksEveryComponentOfARegistration() {
		// A new component must be encoded by BootstrapFields.registration and checked by the test above.
		assertThat(PrefillRegistration.class.getRecordComponents()).hasSize(9);
		assertThat(ParallelLayout.class.getRecordComponents()).hasSize(10);
	}

	@Test
	void theClientSendsOnlySchemaFields() throws Exception {
		JsonNode body = Json.readObject(BootstrapCodec.encodeRegistration(EVERY_OPTION));
		List<String> sent = new ArrayList<>();
		body.fieldNames().forEachRemaining(sent::add);
		List<String> known = new ArrayList<>(BootstrapFields.REGISTRATION);
		known.add(BootstrapFields.ALL_CP_RANKS_TRANSFER);
		assertThat(known).containsAll(sent);
	}

	@Test
	void theServersOlderParallelInfoAnswerIsReadWhole() {
		PrefillTopology topology = new PrefillTopology(4, 1, 2, 3, 16, null, true, false, null, Map.of());
		byte[] answer = Json.write(topology.toLegacyJson());
		assertThat(BootstrapCodec.decodeParallelInfo("GET info", answer))
				.isEqualTo(new PrefillParallelInfo(4, 2, 3, 16));
		for (String field : BootstrapFields.LEGACY_PARALLEL_INFO) {
			ObjectNode without = (ObjectNode) Json.readObject(answer);
			without.remove(field);
			assertThatThrownBy(() -> BootstrapCodec.decodeParallelInfo("GET info", Json.write(without)))
					.as("the client reads %s", field)
					.isInstanceOf(BootstrapException.class)
					.hasMessageContaining(field);
		}
	}

	@Test
	void theServersEndpointAnswerIsReadWhole() {
		byte[] answer = Json.write(new RankEndpoint("10.0.0.7", 17001).toJson());
		assertThat(BootstrapCodec.decodeRankEndpoint("GET rank", answer)).isEqualTo(new HostPort("10.0.0.7", 17001));
		for (String field : BootstrapFields.ENDPOINT) {
			ObjectNode without = (ObjectNode) Json.readObject(answer);
			without.remove(field);
			assertThatThrownBy(() -> BootstrapCodec.decodeRankEndpoint("GET rank", Json.write(without)))
					.as("the client reads %s", field)
					.isInstanceOf(BootstrapException.class)
					.hasMessageContaining(field);
		}
	}

	@Test
	void theServersIncarnationAndFurtherEndpointsAreReadWithTheEndpoint() {
		byte[] answer = Json.write(new RankEndpoint("10.0.0.7", 17001, EVERY_OPTION.incarnation(),
				EVERY_OPTION.moreEndpoints()).toJson());
		assertThat(BootstrapCodec.decodeRankRoute("GET rank", answer))
				.isEqualTo(new RankRoute(new HostPort("10.0.0.7", 17001), EVERY_OPTION.incarnation(),
						EVERY_OPTION.moreEndpoints()));
	}
}
