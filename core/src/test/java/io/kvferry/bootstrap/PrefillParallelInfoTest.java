package io.kvferry.bootstrap;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvferry.ParallelLayout;
import io.kvferry.TopologyException;
import org.junit.jupiter.api.Test;

/** A prefill instance's sizes say which decode layouts can pull from it, before any manager starts. */
class PrefillParallelInfoTest {

	private static ParallelLayout decode(int tp, int pp, int ppRank) {
		return new ParallelLayout(tp, 0, 1, 0, 1, 0, pp, ppRank);
	}

	@Test
	void acceptsTpSizesThatDivideEachOtherAndEqualOrSinglePpStages() {
		PrefillParallelInfo prefill = new PrefillParallelInfo(2, 1, 2, 16);
		assertThatCode(() -> prefill.checkDecode(decode(4, 2, 1), 16, false)).doesNotThrowAnyException();
		assertThatCode(() -> prefill.checkDecode(decode(1, 1, 0), 16, true)).doesNotThrowAnyException();
	}

	@Test
	void refusesTpSizesThatDoNotDivideEachOtherNamingBoth() {
		assertThatThrownBy(() -> new PrefillParallelInfo(2, 1, 1, 16).checkDecode(decode(3, 1, 0), 16, false))
				.isInstanceOf(TopologyException.class)
				.hasMessageContaining("prefill attn_tp_size=2 and decode attn_tp_size=3");
	}

	@Test
	void refusesAnotherPageSizeUnlessBothArePowersOfTwo() {
		new PrefillParallelInfo(1, 1, 1, 16).checkDecode(decode(1, 1, 0), 32, false);
		new PrefillParallelInfo(1, 1, 1, 64).checkDecode(decode(1, 1, 0), 1, false);
		assertThatThrownBy(() -> new PrefillParallelInfo(1, 1, 1, 16).checkDecode(decode(1, 1, 0), 24, false))
				.isInstanceOf(TopologyException.class)
				.hasMessageContaining("page sizes differ and are not both powers of two: prefill page_size=16, "
						+ "decode page_size=24");
	}

	@Test
	void theSizesABootstrapServerAnswersAreBoundedAsAPeersHandshakeIs() {
		assertThatCode(() -> new PrefillParallelInfo(1 << 8, 1 << 4, 1 << 4, 1 << 16)).doesNotThrowAnyException();
		// A decode with PP 1 plans one target per prefill PP stage: a huge PP size must not size an allocation.
		assertThatThrownBy(() -> new PrefillParallelInfo(1, 1, Integer.MAX_VALUE, 16))
				.isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("tp × dp × pp and page_size at most 65536");
		assertThatThrownBy(() -> new PrefillParallelInfo(1 << 8, 1 << 8, 2, 16))
				.isInstanceOf(IllegalArgumentException.class);
		assertThatThrownBy(() -> new PrefillParallelInfo(1, 1, 1, (1 << 16) + 1))
				.isInstanceOf(IllegalArgumentException.class);
	}

	@Test
	void refusesADecodePpSizeOtherThanOneOrThePrefills() {
		assertThatThrownBy(() -> new PrefillParallelInfo(1, 1, 4, 16).checkDecode(decode(1, 2, 0), 16, false))
				.isInstanceOf(TopologyException.class);
	}
}
