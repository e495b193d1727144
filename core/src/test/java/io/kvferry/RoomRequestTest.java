package io.kvferry;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import io.kvferry.internal.topology.Repaging;
import org.junit.jupiter.api.Test;

/** An engine that does not know a room's tokens sizes it from decode's request, whatever the two page sizes. */
class RoomRequestTest {

	@Test
	void pagesHoldEveryTokenSlotDecodeAskedForInTheEnginesOwnPages() {
		// 13 decode pages of 16 tokens after a prefix of 64 tokens.
		RoomRequest request = new RoomRequest(7, 13, 0, false, 64, 16);

		assertThat(request.pages(16)).isEqualTo(4 + 13);
		assertThat(request.pages(1)).isEqualTo(64 + 13 * 16);
		assertThat(request.pages(64)).isEqualTo(1 + 4);
		for (int own : new int[] { 1, 2, 16, 64 }) {
			int prefix = 64 / own;
			assertThat(Repaging.matches(request.pages(own) - prefix, own, 13, 16)).as("prefill pages of %d", own)
					.isTrue();
		}
	}

	@Test
	void withDecodesPageSizeUnknownItIsTakenAsTheEnginesOwn() {
		assertThat(new RoomRequest(7, 13, 0, false, 32).pages(16)).isEqualTo(2 + 13);
		assertThat(new RoomRequest(7, 13, 0, false).pages(4)).isEqualTo(13);
		assertThatIllegalArgumentException().isThrownBy(() -> new RoomRequest(7, 1, 0, false).pages(0))
				.withMessage("pageSize : 0 (expected: >= 1)");
	}
}
