package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** Which incarnation of a peer is current, and when another one replaces it. */
class PeerIncarnationsTest {

	private final PeerIncarnations<String> peers = new PeerIncarnations<>();

	@Test
	void theFirstSightOfAPeerReplacesNothing() {
		assertThat(peers.observe("a", 7)).isEqualTo(Incarnation.UNKNOWN);
		assertThat(peers.current("a")).isEqualTo(7);
		assertThat(peers.observe("a", 7)).isEqualTo(Incarnation.UNKNOWN);
	}

	@Test
	void anotherIncarnationReplacesTheCurrentOneAtOnce() {
		peers.observe("a", 7);
		assertThat(peers.observe("a", 8)).isEqualTo(7);
		assertThat(peers.current("a")).isEqualTo(8);
		assertThat(peers.isRetired("a", 7)).isTrue();
		// Another peer is not concerned.
		assertThat(peers.observe("b", 9)).isEqualTo(Incarnation.UNKNOWN);
	}

	@Test
	void aRetiredIncarnationSeenAgainChangesNothing() {
		peers.observe("a", 7);
		peers.observe("a", 8);
		// A registry that still answers the old registration must not bring the dead process back.
		assertThat(peers.observe("a", 7)).isEqualTo(Incarnation.UNKNOWN);
		assertThat(peers.current("a")).isEqualTo(8);
		assertThat(peers.observe("a", 9)).isEqualTo(8);
	}

	@Test
	void retiredIncarnationsAreBoundedPerPeerAndPeersInAll() {
		PeerIncarnations<String> few = new PeerIncarnations<>(2);
		for (long i = 1; i <= PeerIncarnations.RETIRED_KEPT + 2; i++) {
			few.observe("a", i);
		}
		// The oldest retired ones are forgotten first; the latest RETIRED_KEPT stay refused.
		assertThat(few.isRetired("a", 1)).isFalse();
		assertThat(few.isRetired("a", 2)).isTrue();
		assertThat(few.isRetired("a", PeerIncarnations.RETIRED_KEPT + 1)).isTrue();
		few.observe("b", 100);
		few.observe("c", 200);
		// The peer seen longest ago is forgotten: its next incarnation is a first sight.
		assertThat(few.peers()).isEqualTo(2);
		assertThat(few.current("a")).isEqualTo(Incarnation.UNKNOWN);
		assertThat(few.current("b")).isEqualTo(100);
		assertThat(few.current("c")).isEqualTo(200);
	}

	@Test
	void anUnknownIncarnationNeverReplaces() {
		peers.observe("a", 7);
		assertThat(peers.observe("a", Incarnation.UNKNOWN)).isEqualTo(Incarnation.UNKNOWN);
		assertThat(peers.current("a")).isEqualTo(7);
		assertThat(Incarnation.replaces(Incarnation.UNKNOWN, 7)).isFalse();
		assertThat(Incarnation.replaces(7, Incarnation.UNKNOWN)).isFalse();
		assertThat(Incarnation.replaces(7, 8)).isTrue();
	}

	@Test
	void drawnIncarnationsAreNeverUnknownAndRarelyEqual() {
		long a = Incarnation.draw();
		long b = Incarnation.draw();
		assertThat(a).isNotEqualTo(Incarnation.UNKNOWN).isNotEqualTo(b);
		assertThat(Incarnation.text(0x1fL)).isEqualTo("000000000000001f");
		assertThat(Incarnation.text(Incarnation.UNKNOWN)).isEqualTo("unknown");
	}
}
