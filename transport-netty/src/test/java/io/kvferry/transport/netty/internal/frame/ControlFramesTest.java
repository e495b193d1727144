package io.kvferry.transport.netty.internal.frame;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

import io.kvferry.ProtocolException;
import io.kvferry.spi.KVMessage;
import io.kvferry.test.Samples;
import io.kvferry.transport.netty.internal.KVFrameCodec;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

/** The control-frame table is complete: every message type has one entry, and every entry round-trips. */
class ControlFramesTest {

	private static final PooledByteBufAllocator ALLOC = PooledByteBufAllocator.DEFAULT;

	@Test
	void everyMessageTypeHasExactlyOneEntry() {
		Set<Class<?>> messageTypes = Set.of(KVMessage.class.getPermittedSubclasses());
		List<Class<?>> inTable = ControlFrames.all().stream().<Class<?>>map(ControlCodec::messageType).toList();
		assertThat(inTable).as("message types with a codec in ControlFrames").doesNotHaveDuplicates()
				.containsExactlyInAnyOrderElementsOf(messageTypes);
		for (ControlCodec<?> codec : ControlFrames.all()) {
			assertThat(ControlFrames.forType(codec.type())).isSameAs(codec);
			assertThat(KVFrameCodec.isControlType(codec.type())).isTrue();
			assertThat(KVFrameCodec.typeName(codec.type())).isEqualTo(codec.name());
		}
		assertThat(ControlFrames.all().stream().map(ControlCodec::name).collect(Collectors.toSet()))
				.hasSameSizeAs(ControlFrames.all());
	}

	@Test
	void everyEntryRoundTripsEachOfItsSamples() {
		List<KVMessage> samples = Samples.everyMessage();
		for (ControlCodec<?> codec : ControlFrames.all()) {
			List<KVMessage> mine = samples.stream().filter(codec.messageType()::isInstance).toList();
			assertThat(mine).as("samples of " + codec).isNotEmpty();
			for (KVMessage message : mine) {
				ByteBuf frame = KVFrameCodec.encode(ALLOC, message, 1 << 20);
				try {
					assertThat(frame.readUnsignedInt()).isEqualTo(frame.readableBytes());
					assertThat(frame.readUnsignedByte()).as(codec + " type byte").isEqualTo((short) codec.type());
					assertThat(frame.readableBytes()).as(codec + " body length").isEqualTo(codec.bodyLength(message));
					assertThat(KVFrameCodec.decode(codec.type(), frame)).isEqualTo(message);
					assertThat(frame.isReadable()).isFalse();
				}
				finally {
					assertThat(frame.release()).isTrue();
				}
			}
		}
	}

	@Test
	void everyEntryRefusesATruncatedOrLongerBodyNamingItsFrame() {
		for (KVMessage message : Samples.everyMessage()) {
			ControlCodec<?> codec = ControlFrames.forMessage(message);
			byte[] body = body(message);
			for (int cut = 0; cut < body.length; cut++) {
				assertThat(decodeFailure(codec, Arrays.copyOf(body, cut))).as(codec + " cut at " + cut)
						.isInstanceOf(ProtocolException.class)
						.hasMessageStartingWith("malformed " + codec.name() + " frame: ");
			}
			assertThat(decodeFailure(codec, Arrays.copyOf(body, body.length + 1))).isInstanceOf(ProtocolException.class)
					.hasMessage("malformed " + codec.name() + " frame: 1 trailing bytes after the last field");
		}
	}

	@Test
	void aTypeOutsideTheTableIsNoControlType() {
		for (int type = 0; type < 256; type++) {
			if (ControlFrames.forType(type) != null) {
				continue;
			}
			int unknown = type;
			assertThat(KVFrameCodec.isControlType(type)).isFalse();
			assertThatThrownBy(() -> KVFrameCodec.decode(unknown, Unpooled.buffer(0)))
					.isInstanceOf(ProtocolException.class)
					.hasMessage("unknown frame type " + KVFrameCodec.typeName(unknown));
		}
		assertThat(ControlFrames.forType(-1)).isNull();
		assertThat(ControlFrames.forType(256)).isNull();
	}

	private static Throwable decodeFailure(ControlCodec<?> codec, byte[] body) {
		ByteBuf buf = Unpooled.wrappedBuffer(body);
		try {
			return catchThrowable(() -> KVFrameCodec.decode(codec.type(), buf));
		}
		finally {
			buf.release();
		}
	}

	private static byte[] body(KVMessage message) {
		ByteBuf frame = KVFrameCodec.encode(ALLOC, message, 1 << 20);
		try {
			frame.skipBytes(KVFrameCodec.FRAME_PREFIX_LENGTH);
			byte[] body = new byte[frame.readableBytes()];
			frame.readBytes(body);
			return body;
		}
		finally {
			frame.release();
		}
	}
}
