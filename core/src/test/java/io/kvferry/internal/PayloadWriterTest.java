package io.kvferry.internal;

import java.util.Arrays;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.CRC32C;

import io.kvferry.MemoryRegion;
import io.kvferry.internal.stripe.Tally;
import io.kvferry.spi.NativeMemory;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.RegionKind;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class PayloadWriterTest {

	private final MemoryRegion dest = MemoryRegion.allocate(4096, 1);
	private final AtomicBoolean live = new AtomicBoolean(true);
	private final AtomicInteger completed = new AtomicInteger();

	private PayloadWriter writer(DataHeader h) {
		return PayloadWriter.of(dest.address() + h.dstOffset(), h, live::get, new Tally(false),
				(w, n) -> completed.incrementAndGet());
	}

	private static byte[] pattern(int n) {
		byte[] b = new byte[n];
		for (int i = 0; i < n; i++) {
			b[i] = (byte) (i * 7 + 3);
		}
		return b;
	}

	/** What a socket read into a landing zone does: the bytes land in place, and the transport reports how many. */
	private static void read(PayloadWriter w, ByteBuf zone, byte[] payload, int from, int n) {
		zone.writeBytes(payload, from, n);
		w.landed(n);
	}

	private byte[] destBytes(long offset, int n) {
		byte[] b = new byte[n];
		ByteBuf view = dest.wrap(offset, n);
		view.getBytes(0, b);
		view.release();
		return b;
	}

	/** Chunk {@code c} of {@code payload} must be at {@code offset + c × stride}. */
	private void assertChunks(byte[] payload, long offset, int chunkLen, long stride) {
		for (int c = 0; c < payload.length / chunkLen; c++) {
			assertThat(destBytes(offset + c * stride, chunkLen)).as("chunk %d", c)
					.isEqualTo(Arrays.copyOfRange(payload, c * chunkLen, (c + 1) * chunkLen));
		}
	}

	@Test
	void scattersStridedChunksWhateverTheSegmentCuts() {
		// 3 chunks of 10 bytes, 32 bytes apart, from offset 100; segments of 7 bytes cut chunks anywhere.
		DataHeader h = new DataHeader(1, RegionKind.KV, 0, 100, 10, 32, 3);
		PayloadWriter w = writer(h);
		byte[] payload = pattern(30);
		for (int i = 0; i < 30; i += 7) {
			w.write(Unpooled.wrappedBuffer(payload, i, Math.min(7, 30 - i)));
		}
		w.complete();
		assertChunks(payload, 100, 10, 32);
		for (int c = 0; c < 3; c++) {
			assertThat(destBytes(110 + c * 32L, 22)).as("gap after chunk %d", c).containsOnly(0);
		}
		assertThat(completed).hasValue(1);
	}

	@Test
	void aContiguousPayloadOffersItsRestAsALandingZoneAndDoesNotCopyWhatLandedThere() {
		DataHeader h = new DataHeader(1, RegionKind.KV, 0, 256, 1000, 1000, 1);
		PayloadWriter w = writer(h);
		byte[] payload = pattern(1000);
		w.write(Unpooled.wrappedBuffer(payload, 0, 100));

		ByteBuf zone = w.landingZone(64, 600);
		assertThat(zone.memoryAddress()).isEqualTo(dest.address() + 256 + 100);
		assertThat(zone.readableBytes()).isZero();
		assertThat(zone.writableBytes()).isEqualTo(600);
		read(w, zone, payload, 100, 600);
		zone.release();

		assertThat(w.landingZone(64, 4096).writableBytes()).as("never past the payload's end").isEqualTo(300);
		w.write(Unpooled.wrappedBuffer(payload, 700, 300));
		w.complete();
		assertThat(destBytes(256, 1000)).isEqualTo(payload);
		assertThat(w.landingZone(1, 4096)).as("nothing left").isNull();
		assertThat(completed).hasValue(1);
	}

	@Test
	void aStridedPayloadOffersOnlyTheRestOfTheCurrentChunk() {
		DataHeader h = new DataHeader(1, RegionKind.KV, 0, 0, 100, 300, 4);
		PayloadWriter w = writer(h);
		byte[] payload = pattern(400);
		w.write(Unpooled.wrappedBuffer(payload, 0, 130));

		assertThat(w.landingZone(71, 4096)).as("70 bytes left in chunk 1").isNull();
		ByteBuf zone = w.landingZone(70, 4096);
		assertThat(zone.memoryAddress()).isEqualTo(dest.address() + 300 + 30);
		assertThat(zone.writableBytes()).isEqualTo(70);
		read(w, zone, payload, 130, 70);
		w.write(Unpooled.wrappedBuffer(payload, 200, 200));
		assertChunks(payload, 0, 100, 300);
	}

	@Test
	void aZoneTakesSeveralReadsInTurnUntilItIsFull() {
		DataHeader h = new DataHeader(1, RegionKind.KV, 0, 0, 1000, 1000, 1);
		PayloadWriter w = writer(h);
		byte[] payload = pattern(1000);
		ByteBuf zone = w.landingZone(64, 1000);
		// A transport may keep a zone across its reads: each lands right after the one before.
		read(w, zone, payload, 0, 300);
		read(w, zone, payload, 300, 500);
		assertThatThrownBy(() -> w.landed(201)).hasMessageContaining("more than the zone's 200 bytes");
		read(w, zone, payload, 800, 200);
		zone.release();
		assertThatThrownBy(() -> w.landed(1)).hasMessageContaining("no landing zone outstanding");
		w.complete();
		assertThat(destBytes(0, 1000)).isEqualTo(payload);
		assertThat(completed).hasValue(1);
	}

	@Test
	void readsOfOneStretchShareOneViewAndARoomThatStoppedGetsNoneOfIt() {
		DataHeader h = new DataHeader(1, RegionKind.KV, 0, 0, 1000, 1000, 1);
		PayloadWriter w = writer(h);
		byte[] payload = pattern(1000);
		ByteBuf first = w.landingZone(64, 1000);
		read(w, first, payload, 0, 300);
		first.release();
		ByteBuf second = w.landingZone(64, 700);
		assertThat(second).as("the same view, at the next read's position").isSameAs(first);
		assertThat(second.memoryAddress() + second.writerIndex()).isEqualTo(dest.address() + 300);
		assertThat(second.readableBytes()).isZero();
		assertThat(second.writableBytes()).isEqualTo(700);
		read(w, second, payload, 300, 200);
		second.release();
		ByteBuf smaller = w.landingZone(64, 100);
		assertThat(smaller).as("never more than an offer may take").isNotSameAs(first);
		assertThat(smaller.writableBytes()).isEqualTo(100);
		smaller.release();
		live.set(false);
		assertThat(w.landingZone(64, 500)).as("the room stopped taking bytes: no zone, though the view has room")
				.isNull();
		w.write(Unpooled.wrappedBuffer(payload, 500, 500));
		w.complete();
		assertThat(destBytes(0, 500)).isEqualTo(Arrays.copyOf(payload, 500));
		assertThat(destBytes(500, 500)).as("nothing after the stop").containsOnly(0);
	}

	@Test
	void landedIsOnlyForTheZoneOfferedLast() {
		PayloadWriter w = writer(new DataHeader(1, RegionKind.KV, 0, 0, 1000, 1000, 1));
		assertThatThrownBy(() -> w.landed(10)).isInstanceOf(IllegalStateException.class)
				.hasMessageContaining("no landing zone outstanding");
		w.landingZone(1, 100).release();
		assertThatThrownBy(() -> w.landed(101)).hasMessageContaining("more than the zone's 100 bytes");
		w.landingZone(1, 100).release();
		// The read came through another buffer after all: the zone is no longer outstanding.
		w.write(Unpooled.wrappedBuffer(pattern(10)));
		assertThatThrownBy(() -> w.landed(10)).hasMessageContaining("no landing zone outstanding");
	}

	@Test
	void aRoomThatStoppedAcceptingBytesOffersNoZoneAndTakesNoByte() {
		DataHeader h = new DataHeader(1, RegionKind.KV, 0, 0, 200, 200, 1);
		PayloadWriter w = writer(h);
		w.write(Unpooled.wrappedBuffer(pattern(50)));
		live.set(false);

		assertThat(w.landingZone(1, 4096)).isNull();
		w.write(Unpooled.wrappedBuffer(pattern(150)));
		w.complete();
		assertThat(destBytes(50, 150)).containsOnly(0);
		assertThat(completed).as("a fenced payload does not count as received").hasValue(0);
	}

	@Test
	void moreBytesThanTheHeaderAnnouncedAreRefused() {
		PayloadWriter w = writer(new DataHeader(1, RegionKind.KV, 0, 0, 10, 10, 1));
		assertThatThrownBy(() -> w.write(Unpooled.wrappedBuffer(pattern(11))))
				.isInstanceOf(IllegalStateException.class).hasMessageContaining("payload overrun: 11 > 10");
		assertThat(destBytes(0, 11)).containsOnly(0);
	}

	@Test
	void aZoneIsAViewThatFreesNothing() {
		PayloadWriter w = writer(new DataHeader(1, RegionKind.KV, 0, 0, 128, 128, 1));
		ByteBuf zone = w.landingZone(1, 128);
		zone.release();
		// The memory is still the region's: writing through a fresh view works.
		NativeMemory.wrap(dest.address(), 1).setByte(0, 42);
		assertThat(destBytes(0, 1)).containsExactly(42);
	}

	@Test
	void bytesThatLandedInPlaceAreCheckedAndCountedLikeCopiedOnes() {
		// Strided: 3 chunks of 100 bytes, 300 apart; the middle chunk partly lands in place, partly is copied.
		DataHeader h = new DataHeader(1, RegionKind.KV, 0, 50, 100, 300, 3);
		Tally tally = new Tally(true);
		AtomicLong completedBytes = new AtomicLong();
		PayloadWriter w = PayloadWriter.of(dest.address() + 50, h, live::get, tally,
				(writer, n) -> completedBytes.addAndGet(n));
		byte[] payload = pattern(300);
		w.write(Unpooled.wrappedBuffer(payload, 0, 130));
		ByteBuf zone = w.landingZone(1, 4096);
		assertThat(zone.writableBytes()).as("the rest of the middle chunk").isEqualTo(70);
		read(w, zone, payload, 130, 50);
		zone.release();
		w.write(Unpooled.wrappedBuffer(payload, 180, 120));
		w.complete();

		assertChunks(payload, 50, 100, 300);
		CRC32C expected = new CRC32C();
		expected.update(payload);
		assertThat(tally.checksum()).as("CRC32C of the payload in stream order").isEqualTo(expected.getValue());
		assertThat(tally.bytes()).isEqualTo(300);
		assertThat(completedBytes).hasValue(300);
	}

	@Test
	void aRoomThatStopsAcceptingBytesDuringALandingReadTakesNothingAfterIt() {
		DataHeader h = new DataHeader(1, RegionKind.KV, 0, 0, 1000, 1000, 1);
		Tally tally = new Tally(true);
		PayloadWriter w = PayloadWriter.of(dest.address(), h, live::get, tally,
				(writer, n) -> completed.incrementAndGet());
		byte[] payload = pattern(1000);
		ByteBuf zone = w.landingZone(1, 400);
		zone.writeBytes(payload, 0, 400);
		// The abort comes while the read is in the socket: the bytes are in the room's pages already, nothing more.
		live.set(false);
		w.landed(400);
		zone.release();
		assertThat(w.landingZone(1, 4096)).as("no zone once fenced").isNull();
		live.set(true);
		w.write(Unpooled.wrappedBuffer(payload, 400, 600));
		w.complete();

		assertThat(destBytes(400, 600)).as("nothing written after the fence").containsOnly(0);
		assertThat(completed).as("a fenced payload never completes").hasValue(0);
		assertThat(tally.bytes()).isZero();
	}

	@Test
	void landedTakesBetweenOneByteAndTheWholeZone() {
		PayloadWriter w = writer(new DataHeader(1, RegionKind.KV, 0, 0, 1000, 1000, 1));
		w.landingZone(1, 100).release();
		assertThatThrownBy(() -> w.landed(0)).hasMessageContaining("landed(0)");
		w.landed(1);
		ByteBuf again = w.landingZone(1, 100);
		assertThat(again.writableBytes()).as("the rest of the view offered before").isEqualTo(99);
		again.release();
		assertThatThrownBy(() -> w.landed(100)).hasMessageContaining("more than the zone's 99 bytes");
		w.landed(99);
		assertThat(w.landingZone(1, 4096).writableBytes()).as("what is left after 100 bytes").isEqualTo(900);
	}
}
