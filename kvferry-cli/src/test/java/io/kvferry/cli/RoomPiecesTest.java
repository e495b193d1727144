package io.kvferry.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;

import io.netty.util.internal.PlatformDependent;
import org.junit.jupiter.api.Test;

class RoomPiecesTest {

	@Test
	void laidOutThePiecesFollowOneAnotherPairAfterPairAtTheSameOffsetsOnBothSides() {
		RoomPieces scattered = new RoomPieces(new long[][] { { 9000, 100, 16, 5000, 700, 32 }, { 40, 60, 8 } },
				new int[][] { { 0, 1, 2 }, { 0, 0, 1 } });
		RoomPieces laid = scattered.laidOut(1_000_000, 2_000_000);
		assertThat(laid.pieces()[0]).containsExactly(1_000_000, 2_000_000, 16, 1_000_016, 2_000_016, 32);
		assertThat(laid.pieces()[1]).containsExactly(1_000_048, 2_000_048, 8);
		assertThat(laid.roomStarts()).isSameAs(scattered.roomStarts());
		assertThat(laid.count()).isEqualTo(3);
		assertThat(laid.bytes()).isEqualTo(56);
	}

	@Test
	void landedOnlyOnceEveryDestinationHoldsItsSourcesBytes() {
		ByteBuffer mem = ByteBuffer.allocateDirect(256);
		long a = PlatformDependent.directBufferAddress(mem);
		for (int i = 0; i < 64; i++) {
			mem.put(i, (byte) (i + 1));
		}
		RoomPieces pieces = new RoomPieces(new long[][] { { a, a + 128, 40 }, { a + 40, a + 200, 24 } },
				new int[][] { { 0, 1 }, { 0, 1 } });
		assertThat(pieces.landed()).isFalse();
		mem.put(128, mem, 0, 40);
		assertThat(pieces.landed()).as("the second pair's piece is still missing").isFalse();
		mem.put(200, mem, 40, 24);
		assertThat(pieces.landed()).isTrue();
		pieces.clearDestinations();
		assertThat(pieces.landed()).isFalse();
		for (int i = 0; i < 64; i++) {
			assertThat(mem.get(i)).as("source byte %d", i).isEqualTo((byte) (i + 1));
		}
	}
}
