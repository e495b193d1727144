package io.kvferry.bootstrap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;

import io.kvferry.HostPort;
import io.kvferry.ParallelLayout;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A rank's further endpoints (one per further network interface): written after SGLang's fields and only when there
 * are any, read back as written, and bounded when a peer sends them.
 */
class MoreEndpointsTest {

	private static final List<HostPort> MORE = List.of(new HostPort("10.2.0.7", 17000), new HostPort("fd00::7", 17001),
			new HostPort("prefill-0.nic2", 17002));

	@Test
	void aRegistrationSendsThemAfterSglangsFieldsAndOnlyWhenItHasAny() {
		PrefillRegistration one = PrefillRegistration.prefill(ParallelLayout.SINGLE, "10.1.0.7", 17000, 16);
		assertThat(BootstrapFields.registration(one)).doesNotContainKey(BootstrapFields.MORE_ENDPOINTS);

		Map<String, Object> body = BootstrapFields.registration(one.withMoreEndpoints(MORE).withIncarnation(5));
		assertThat(body).containsEntry(BootstrapFields.RANK_IP, "10.1.0.7").containsEntry(BootstrapFields.RANK_PORT,
				17000).containsEntry(BootstrapFields.MORE_ENDPOINTS, "10.2.0.7:17000,[fd00::7]:17001,prefill-0.nic2:17002");
		List<String> keys = new ArrayList<>(body.keySet());
		assertThat(keys.indexOf(BootstrapFields.MORE_ENDPOINTS)).isGreaterThan(keys.indexOf(BootstrapFields.RANK_PORT));
		assertThat(BootstrapFields.REGISTRATION).contains(BootstrapFields.MORE_ENDPOINTS);
	}

	@Test
	void theTextReadsBackAsWrittenAndARouteDealsFromItsFirstEndpoint() {
		assertThat(BootstrapFields.parseEndpoints(BootstrapFields.endpointsText(MORE))).isEqualTo(MORE);
		assertThat(BootstrapFields.parseEndpoints(null)).isEmpty();
		RankRoute route = new RankRoute(new HostPort("10.1.0.7", 17000), 9, MORE);
		assertThat(route.endpoints()).hasSize(4).startsWith(route.endpoint()).endsWith(MORE.toArray(HostPort[]::new));
		assertThat(RankRoute.of(route.endpoint()).endpoints()).containsExactly(route.endpoint());
		assertThat(BootstrapFields.endpoint("10.1.0.7", 17000, 9, List.of()))
				.isEqualTo(BootstrapFields.endpoint("10.1.0.7", 17000, 9));
	}

	@ParameterizedTest
	@CsvSource(delimiter = '|', value = {
			"''| empty (expected: host:port)",
			"10.0.0.1:17000,| empty (expected: host:port)",
			"10.0.0.1| missing ':port'",
			"10.0.0.1:0| port 1..65535",
			"10.0.0.1:70000| port 70000",
			"fd00::1:17000| ambiguous IPv6",
			"10.0.0.1:17000,10.0.0.1:17000| 10.0.0.1:17000 twice",
			"a:1,b:1,c:1,d:1,e:1,f:1,g:1,h:1| 8 endpoints (expected: at most 7",
			"'bad\thost:1'| no whitespace or control character",
	})
	void aMalformedValueIsNamed(String text, String expected) {
		assertThatThrownBy(() -> BootstrapFields.parseEndpoints(text)).isInstanceOf(IllegalArgumentException.class)
				.hasMessageStartingWith(BootstrapFields.MORE_ENDPOINTS).hasMessageContaining(expected.strip());
	}

	@Test
	void aValueLongerThanTheMostEndpointsCanBeIsRefusedBeforeItIsRead() {
		String huge = String.join(",", Collections.nCopies(100_000, "a:1"));
		assertThatThrownBy(() -> BootstrapFields.parseEndpoints(huge)).isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining(huge.length() + " characters (expected: at most");
	}

	@Test
	void aRouteOrRegistrationHoldsAtMostSevenFurtherEndpoints() {
		List<HostPort> eight = new ArrayList<>();
		for (int i = 0; i < BootstrapFields.MAX_ENDPOINTS; i++) {
			eight.add(new HostPort("10.0.0." + i, 1));
		}
		assertThatThrownBy(() -> new RankRoute(new HostPort("10.1.0.1", 1), 0, eight))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at most 7");
		assertThatThrownBy(() -> PrefillRegistration.prefill(ParallelLayout.SINGLE, "10.1.0.1", 1, 16)
				.withMoreEndpoints(eight)).isInstanceOf(IllegalArgumentException.class);
	}

	/** What a peer sends: any text is read into at most seven endpoints, or refused with a message; nothing else. */
	@Test
	void fuzzedValuesAreReadOrRefusedNamingTheField() {
		Random random = new Random(42);
		String alphabet = "0123456789abcdef.:,[]- \t\u0000\u00e9";
		int read = 0;
		for (int i = 0; i < 20_000; i++) {
			StringBuilder text = new StringBuilder();
			int length = random.nextInt(40);
			for (int k = 0; k < length; k++) {
				text.append(alphabet.charAt(random.nextInt(alphabet.length())));
			}
			try {
				List<HostPort> endpoints = BootstrapFields.parseEndpoints(text.toString());
				assertThat(endpoints).hasSizeBetween(1, BootstrapFields.MAX_ENDPOINTS - 1).doesNotHaveDuplicates()
						.allSatisfy(e -> assertThat(e.port()).isBetween(1, 65535));
				read++;
			}
			catch (IllegalArgumentException e) {
				assertThat(e.getMessage()).startsWith(BootstrapFields.MORE_ENDPOINTS);
			}
		}
		assertThat(read).as("some fuzzed values are well formed").isPositive();
	}
}
