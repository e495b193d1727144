package io.kvferry.transport.ucx.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Random;

import io.kvferry.FailureCause;
import io.kvferry.ProtocolException;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.FailureCodes;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.RegionKind;
import io.kvferry.test.Samples;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

/**
 * The UCX transport's codec of control messages and data headers: every message type the SPI declares has a wire
 * form and comes back equal; the bytes are the fields in declaration order; every prefix of an encoding and every
 * few-byte change either decodes to a valid message or fails with a {@link ProtocolException}, never anything else.
 */
class RecordCodecTest {

	@Test
	void everyMessageTypeHasAWireFormAndComesBackEqual() {
		for (Class<?> type : RecordCodec.messageTypes()) {
			RecordCodec.check(type);
		}
		List<KVMessage> all = Samples.everyMessage();
		assertThat(all.stream().map(Object::getClass).distinct()).as("Samples cover every message type")
				.hasSameSizeAs(RecordCodec.messageTypes());
		for (KVMessage m : all) {
			assertThat(RecordCodec.readMessage(Unpooled.wrappedBuffer(encode(m)))).as("%s", m).isEqualTo(m);
		}
	}

	@Test
	void aDataHeaderIsItsFieldsInOrderBigEndian() {
		DataHeader h = new DataHeader(0x0102030405060708L, RegionKind.STATE, 9, 0x1122L, 0x33, 0x44L, 5);
		ByteBuf out = Unpooled.buffer();
		RecordCodec.write(out, h);
		byte[] expected = { 1, 2, 3, 4, 5, 6, 7, 8, 2, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0x11, 0x22, 0, 0, 0, 0x33, 0, 0, 0,
				0, 0, 0, 0, 0x44, 0, 0, 0, 5 };
		byte[] actual = new byte[out.readableBytes()];
		out.getBytes(0, actual);
		assertThat(actual).isEqualTo(expected);
		assertThat(RecordCodec.read(out, DataHeader.class)).isEqualTo(h);
		assertThat(out.isReadable()).isFalse();
	}

	@Test
	void anAbortIsItsTypeIndexThenRoomReasonCodeAndRetryHint() {
		int type = RecordCodec.messageTypes().indexOf(KVMessage.Abort.class);
		// The record's components in order: room, reason (length and UTF-8), failure code (ABORTED's), retry hint.
		byte[] expected = { (byte) type, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 2, (byte) 0xc3, (byte) 0xa9, 0, 0, 0,
				(byte) FailureCodes.code(FailureCause.ABORTED), 0, 0, 0, 0 };
		assertThat(encode(new KVMessage.Abort(7, "é"))).isEqualTo(expected);
	}

	@Test
	void everyPrefixOfAnEncodingFailsNamingTheProblem() {
		for (KVMessage m : Samples.everyMessage()) {
			byte[] full = encode(m);
			for (int n = 0; n < full.length; n++) {
				ByteBuf prefix = Unpooled.wrappedBuffer(full, 0, n);
				assertThatThrownBy(() -> RecordCodec.readMessage(prefix)).as("%s cut at %d of %d", m, n, full.length)
						.isInstanceOf(ProtocolException.class)
						.hasMessageContaining("malformed");
			}
			ByteBuf longer = Unpooled.buffer().writeBytes(full).writeByte(0);
			assertThatThrownBy(() -> RecordCodec.readMessage(longer)).isInstanceOf(ProtocolException.class)
					.hasMessageContaining("trailing");
		}
	}

	@Test
	void changedBytesDecodeToAMessageOrFailAsMalformed() {
		Random random = new Random(38);
		List<KVMessage> all = Samples.everyMessage();
		for (int round = 0; round < 20_000; round++) {
			byte[] bytes = encode(all.get(random.nextInt(all.size())));
			int changes = 1 + random.nextInt(3);
			for (int i = 0; i < changes; i++) {
				bytes[random.nextInt(bytes.length)] = (byte) random.nextInt(256);
			}
			try {
				assertThat(RecordCodec.readMessage(Unpooled.wrappedBuffer(bytes))).isNotNull();
			}
			catch (ProtocolException expected) {
				assertThat(expected.getMessage()).contains("malformed");
			}
		}
	}

	@Test
	void aCountLargerThanTheBytesLeftIsRefusedBeforeAllocating() {
		ByteBuf in = Unpooled.buffer();
		in.writeByte(RecordCodec.messageTypes().indexOf(KVMessage.Renew.class));
		in.writeInt(Integer.MAX_VALUE);
		assertThatThrownBy(() -> RecordCodec.readMessage(in)).isInstanceOf(ProtocolException.class)
				.hasMessageContaining("Renew.rooms")
				.hasMessageContaining("count 2147483647");
	}

	private static byte[] encode(KVMessage m) {
		ByteBuf out = Unpooled.buffer();
		RecordCodec.writeMessage(out, m);
		byte[] b = new byte[out.readableBytes()];
		out.readBytes(b);
		return b;
	}
}
