package io.kvferry.transport.netty.internal.frame;

import io.kvferry.spi.KVMessage;
import io.netty.buffer.ByteBuf;

/**
 * How one control message type goes on the wire: its type byte, its name in log lines and errors, and its body's
 * length, bytes and decoding. Each {@link KVMessage} type has exactly one, in {@link ControlFrames}.
 *
 * <p>The body is what follows the type byte. {@link #length} must count exactly the bytes {@link #write} writes:
 * frames are written into buffers of exactly that capacity. {@link #read} reads through a {@link FrameReader}, so a
 * truncated body or a lying count fails naming the frame and the field; the caller checks that nothing is left.
 *
 * @param <M> the message type
 */
public abstract class ControlCodec<M extends KVMessage> {

	private final int type;
	private final String name;
	private final Class<M> messageType;

	ControlCodec(int type, String name, Class<M> messageType) {
		this.type = type;
		this.name = name;
		this.messageType = messageType;
	}

	/** @return the type byte */
	public final int type() {
		return type;
	}

	/** @return the frame's name, as the protocol documentation spells it */
	public final String name() {
		return name;
	}

	/** @return the message type this codec writes and reads */
	public final Class<M> messageType() {
		return messageType;
	}

	/** @return bytes of {@code message}'s body; {@code message} must be of {@link #messageType()} */
	public final long bodyLength(KVMessage message) {
		return length(messageType.cast(message));
	}

	/** Writes {@code message}'s body, {@link #bodyLength} bytes, after the type byte. */
	public final void writeBody(ByteBuf buf, KVMessage message) {
		write(buf, messageType.cast(message));
	}

	/** @return the message read from a body; the caller checks that the body was consumed exactly */
	public final M readBody(FrameReader reader) {
		return read(reader);
	}

	abstract long length(M message);

	abstract void write(ByteBuf buf, M message);

	abstract M read(FrameReader r);

	@Override
	public String toString() {
		return name + String.format("(0x%02x)", type);
	}
}
