package io.kvferry;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.time.Duration;

import org.junit.jupiter.api.Test;

/**
 * A manager's configuration is read-only: a spec hands out copies that no later setter changes, whoever holds them
 * can only read them, and each role's configuration carries its own settings besides the shared ones.
 */
class KVManagerConfigTest {

	@Test
	void aConfigurationHandedOutIsNotChangedByALaterSetter() {
		DecodeSpec spec = KVManagerSpec.decode().stripes(3).maxRooms(4, 8);
		DecodeConfig first = spec.config();
		DecodeSpec other = spec.stripes(5).transferTimeout(Duration.ofSeconds(7)).name("other");
		assertThat(first.stripes()).isEqualTo(3);
		assertThat(first.transferTimeout()).isEqualTo(KVManagerSpec.DEFAULT_STATE_TIMEOUT);
		assertThat(first.maxRoomsPerPeer()).isEqualTo(4);
		assertThat(first.maxRooms()).isEqualTo(8);
		assertThat(first.name()).isEqualTo("decode-dp0-tp0-pp0");
		DecodeConfig second = other.config();
		assertThat(second.stripes()).isEqualTo(5);
		assertThat(second.transferTimeout()).isEqualTo(Duration.ofSeconds(7));
		assertThat(second.name()).isEqualTo("other");
		assertThat(second.maxRooms()).as("copied from the spec it was made from").isEqualTo(8);
		assertThat(spec.config().stripes()).as("the spec itself is unchanged").isEqualTo(3);
	}

	@Test
	void eachRoleCarriesItsOwnSettingsWithTheirDefaults() {
		PrefillConfig prefill = KVManagerSpec.prefill().firstStripeBytes(0).leasePeriod(Duration.ZERO).config();
		assertThat(prefill.mode()).isEqualTo(DisaggregationMode.PREFILL);
		assertThat(prefill.firstStripeBytes()).isZero();
		assertThat(prefill.leasePeriod()).isZero();
		assertThat(prefill.unclaimedRooms()).isEqualTo(PrefillSpec.DEFAULT_UNCLAIMED);
		assertThat(prefill.bindAddress()).isEqualTo(new HostPort("0.0.0.0", 0));
		DecodeConfig decode = KVManagerSpec.decode().config();
		assertThat(decode.mode()).isEqualTo(DisaggregationMode.DECODE);
		assertThat(decode.stripes()).isEqualTo(DecodeSpec.DEFAULT_STRIPES);
		assertThat(decode.breakerFailures()).isEqualTo(DecodeSpec.DEFAULT_BREAKER_FAILURES);
		assertThat(decode.handshakeTimeout()).isEqualTo(KVManagerSpec.DEFAULT_HANDSHAKE_TIMEOUT);
	}

	@Test
	void nothingOutsideTheApiPackageCanWriteAConfiguration() {
		for (Class<?> c : new Class<?>[] { KVManagerConfig.class, PrefillConfig.class, DecodeConfig.class }) {
			for (Field f : c.getDeclaredFields()) {
				int m = f.getModifiers();
				assertThat(Modifier.isPublic(m) || Modifier.isProtected(m)).as("%s.%s is package-private", c, f.getName())
						.isFalse();
			}
			for (Method m : c.getDeclaredMethods()) {
				if (Modifier.isPublic(m.getModifiers())) {
					assertThat(m.getParameterCount()).as("%s.%s is a getter", c.getSimpleName(), m.getName()).isZero();
				}
			}
			for (var k : c.getDeclaredConstructors()) {
				assertThat(Modifier.isPublic(k.getModifiers())).as("%s has no public constructor", c).isFalse();
			}
		}
	}
}
