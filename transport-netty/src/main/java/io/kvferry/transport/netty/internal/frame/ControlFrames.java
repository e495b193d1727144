package io.kvferry.transport.netty.internal.frame;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

import io.kvferry.spi.KVMessage;

/**
 * The table of control frames: one {@link ControlCodec} per {@link KVMessage} type, keyed by its type byte for
 * reading and by its message class for writing. Adding a message type is adding its codec here; a test checks that
 * every {@link KVMessage} type has an entry.
 */
public final class ControlFrames {

	private static final List<ControlCodec<?>> CODECS = List.of(
			new HelloCodec(),
			new HelloAckCodec(),
			new RejectCodec(),
			new TransferRequestCodec(),
			new StatusCodec(),
			new AbortCodec(),
			new AbortAckCodec(),
			new DrainingCodec(),
			new JoinCodec(),
			new JoinedCodec(),
			new FenceCodec(),
			new RenewCodec(),
			new LayoutCodec());

	private static final ControlCodec<?>[] BY_TYPE = new ControlCodec<?>[256];
	private static final Map<Class<?>, ControlCodec<?>> BY_CLASS = new HashMap<>();

	static {
		for (ControlCodec<?> codec : CODECS) {
			int type = codec.type();
			if (BY_TYPE[type] != null) {
				throw new IllegalStateException("frame type " + codec + " is taken by " + BY_TYPE[type]);
			}
			if (BY_CLASS.put(codec.messageType(), codec) != null) {
				throw new IllegalStateException("two codecs for " + codec.messageType().getName());
			}
			BY_TYPE[type] = codec;
		}
	}

	private ControlFrames() {
	}

	/** @return every control codec, in the table's order */
	public static List<ControlCodec<?>> all() {
		return CODECS;
	}

	/** @return the codec of frame type {@code type}, or {@code null} when it is no control type */
	public static ControlCodec<?> forType(int type) {
		return type >= 0 && type < BY_TYPE.length ? BY_TYPE[type] : null;
	}

	/**
	 * @return the codec that writes {@code message}
	 * @throws IllegalArgumentException when the table has no entry for the message's type
	 */
	public static ControlCodec<?> forMessage(KVMessage message) {
		ControlCodec<?> codec = BY_CLASS.get(message.getClass());
		if (codec == null) {
			throw new IllegalArgumentException("no frame codec for " + message.getClass().getName());
		}
		return codec;
	}
}
