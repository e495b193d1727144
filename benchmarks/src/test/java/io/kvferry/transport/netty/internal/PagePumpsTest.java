package io.kvferry.transport.netty.internal;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Every pump moves every piece of a small pool whole, twice (the second run into pages zeroed again). */
@Timeout(120)
class PagePumpsTest {

	@Test
	void everyPumpMovesEveryPieceWhole() throws Exception {
		try (PagePumps pumps = new PagePumps(8 << 20, 3)) {
			assertThat(pumps.pieces()).isGreaterThan(1000);
			assertThat(pumps.bytes()).isEqualTo(6L << 20);
			for (int round = 0; round < 2; round++) {
				for (PagePumps.Pump pump : PagePumps.Pump.values()) {
					assertThat(pumps.run(pump)).as(pump.label()).isPositive();
				}
			}
		}
	}
}
