package io.kvferry.transport.netty.internal.shm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;

import io.kvferry.ProtocolException;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

/**
 * The numbers a same-host offer and reply announce, read from their bodies: slots 1..64, slot size 4 KiB..64 MiB, each
 * string at most 4,096 bytes; a value at each bound is read, one past it is a malformed frame naming the field.
 */
class ShmFramesBoundsTest {

	@Test
	void slotsAndSlotSizeAreReadWithinTheirBoundsOnly() {
		ShmFrames.Offer low = read(offer("h", "p", 1, ShmConfig.MIN_SLOT_SIZE));
		assertThat(low.slots()).isEqualTo(1);
		ShmFrames.Offer high = read(offer("h", "p", ShmConfig.MAX_SLOTS, ShmConfig.MAX_SLOT_SIZE));
		assertThat(high.slotSize()).isEqualTo(64 << 20);
		assertMalformed(offer("h", "p", 0, 4096), "malformed SHM_OFFER frame: slots : 0 (expected: 1..64)");
		assertMalformed(offer("h", "p", 65, 4096), "malformed SHM_OFFER frame: slots : 65 (expected: 1..64)");
		assertMalformed(offer("h", "p", 1, 4095),
				"malformed SHM_OFFER frame: slotSize : 4095 (expected: 4096..67108864)");
		assertMalformed(offer("h", "p", 1, (64 << 20) + 1),
				"malformed SHM_OFFER frame: slotSize : 67108865 (expected: 4096..67108864)");
	}

	@Test
	void itsStringsAreAtMostFourKibibytes() {
		assertThat(read(offer("h".repeat(4096), "p", 1, 4096)).hostIdentity()).hasSize(4096);
		assertMalformed(offer("h".repeat(4097), "p", 1, 4096), "malformed SHM_OFFER frame: hostIdentity length : 4097");
		assertMalformed(offer("h", "p".repeat(4097), 1, 4096), "malformed SHM_OFFER frame: path length : 4097");
	}

	@Test
	void aReplysReasonIsAtMostFourKibibytes() {
		ByteBuf longest = reply("r".repeat(4096));
		try {
			assertThat(ShmFrames.decodeReply(longest).reason()).hasSize(4096);
		}
		finally {
			longest.release();
		}
		ByteBuf over = reply("r".repeat(4097));
		try {
			assertThatThrownBy(() -> ShmFrames.decodeReply(over)).isInstanceOf(ProtocolException.class)
					.hasMessageStartingWith("malformed SHM_REPLY frame: reason length : 4097");
		}
		finally {
			over.release();
		}
	}

	private static ByteBuf reply(String reason) {
		byte[] r = reason.getBytes(StandardCharsets.UTF_8);
		return Unpooled.buffer().writeBoolean(false).writeInt(r.length).writeBytes(r);
	}

	private static ByteBuf offer(String host, String path, int slots, int slotSize) {
		byte[] h = host.getBytes(StandardCharsets.UTF_8);
		byte[] p = path.getBytes(StandardCharsets.UTF_8);
		return Unpooled.buffer().writeInt(h.length).writeBytes(h).writeInt(p.length).writeBytes(p)
				.writeZero(Ring.NONCE_BYTES).writeInt(slots).writeInt(slotSize);
	}

	private static ShmFrames.Offer read(ByteBuf body) {
		try {
			return ShmFrames.decodeOffer(body);
		}
		finally {
			body.release();
		}
	}

	private static void assertMalformed(ByteBuf body, String message) {
		try {
			assertThatThrownBy(() -> ShmFrames.decodeOffer(body)).isInstanceOf(ProtocolException.class)
					.hasMessageStartingWith(message);
		}
		finally {
			body.release();
		}
	}
}
