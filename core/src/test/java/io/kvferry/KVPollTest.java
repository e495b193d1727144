package io.kvferry;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class KVPollTest {

	@Test
	void keepsSglangNumbers() {
		assertThat(KVPoll.FAILED.code()).isZero();
		assertThat(KVPoll.BOOTSTRAPPING.code()).isEqualTo(1);
		assertThat(KVPoll.WAITING_FOR_INPUT.code()).isEqualTo(2);
		assertThat(KVPoll.TRANSFERRING.code()).isEqualTo(3);
		assertThat(KVPoll.SUCCESS.code()).isEqualTo(4);
		for (KVPoll p : KVPoll.values()) {
			assertThat(KVPoll.fromCode(p.code())).isSameAs(p);
		}
	}

	@Test
	void rejectsUnknownCodesByName() {
		assertThatThrownBy(() -> KVPoll.fromCode(5)).hasMessage("KVPoll code : 5 (expected: 0..4)");
		assertThatThrownBy(() -> KVPoll.fromCode(-1)).isInstanceOf(IllegalArgumentException.class);
	}

	@Test
	void onlySuccessAndFailedAreTerminal() {
		assertThat(KVPoll.SUCCESS.isTerminal()).isTrue();
		assertThat(KVPoll.FAILED.isTerminal()).isTrue();
		assertThat(KVPoll.BOOTSTRAPPING.isTerminal()).isFalse();
		assertThat(KVPoll.WAITING_FOR_INPUT.isTerminal()).isFalse();
		assertThat(KVPoll.TRANSFERRING.isTerminal()).isFalse();
	}
}
