package io.kvferry.transport.ucx.internal;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.RecordComponent;
import java.lang.reflect.Type;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import io.kvferry.ProtocolException;
import io.kvferry.RoomClaim;
import io.kvferry.spi.KVMessage;
import io.netty.buffer.ByteBuf;

/**
 * Encodes the transport SPI's records ({@link KVMessage}s, {@link io.kvferry.spi.DataHeader}) field by field, in the
 * order their record components are declared: {@code int} as 4 bytes, {@code long} 8, {@code boolean} 1 (0 or 1), an
 * enum its ordinal in 1 byte, a string or {@code byte[]} a 4-byte length and its bytes (UTF-8), {@code int[]} and
 * {@code long[]} a 4-byte count and the values, a {@code List} a 4-byte count and its elements, a record its components.
 * Big-endian throughout.
 *
 * <p>Why generic: both sides of a UCX connection run the same kvferry release (the handshake compares the message set's
 * version), so the wire is exactly the records as the release declares them, and a field added to a message reaches
 * the wire with no codec to edit. A record component of a type this codec does not know fails the codec's test over
 * every message type, not a peer.
 *
 * <p>Reading trusts nothing: every count and length is checked against the bytes left before anything is allocated, an
 * enum ordinal against the enum's constants, a boolean against 0 and 1; the records' own constructors check their
 * values; and every byte must be consumed. What fails is a {@link ProtocolException} naming the record and the field.
 */
public final class RecordCodec {

	private static final Map<Class<?>, Shape> SHAPES = new ConcurrentHashMap<>();
	/** Message types, in a fixed order both sides derive from the sealed interface. */
	private static final List<Class<?>> MESSAGE_TYPES = Arrays.stream(KVMessage.class.getPermittedSubclasses())
			.sorted(Comparator.comparing(Class::getName))
			.toList();

	private RecordCodec() {
	}

	/** Writes a control message: its type's index in the message set, then its fields. */
	public static void writeMessage(ByteBuf out, KVMessage message) {
		int type = MESSAGE_TYPES.indexOf(message.getClass());
		out.writeByte(type);
		write(out, (Record) message);
	}

	/**
	 * Reads a control message that must fill {@code in}'s readable bytes.
	 *
	 * @throws ProtocolException naming the message and field that is malformed
	 */
	public static KVMessage readMessage(ByteBuf in) {
		if (!in.isReadable()) {
			throw new ProtocolException("malformed UCX control message: empty");
		}
		int type = in.readUnsignedByte();
		if (type >= MESSAGE_TYPES.size()) {
			throw new ProtocolException("malformed UCX control message: unknown type " + type + " (expected: 0.."
					+ (MESSAGE_TYPES.size() - 1) + ")");
		}
		KVMessage m = (KVMessage) read(in, MESSAGE_TYPES.get(type));
		if (in.isReadable()) {
			throw new ProtocolException("malformed UCX control message " + MESSAGE_TYPES.get(type).getSimpleName()
					+ ": " + in.readableBytes() + " trailing bytes");
		}
		return m;
	}

	/** Writes a record's components. */
	public static void write(ByteBuf out, Record record) {
		Shape shape = shape(record.getClass());
		for (int i = 0; i < shape.components.length; i++) {
			Object value;
			try {
				value = shape.accessors[i].invoke(record);
			}
			catch (Throwable e) {
				throw new IllegalStateException("cannot read " + shape.components[i] + ": " + e, e);
			}
			writeValue(out, shape.components[i].getGenericType(), value);
		}
	}

	/**
	 * Reads a record of {@code type} from {@code in}'s next bytes.
	 *
	 * @throws ProtocolException when the bytes are not one
	 */
	public static <R> R read(ByteBuf in, Class<R> type) {
		Shape shape = shape(type);
		Object[] args = new Object[shape.components.length];
		for (int i = 0; i < args.length; i++) {
			args[i] = readValue(in, shape.components[i].getGenericType(), type, shape.components[i].getName());
		}
		try {
			return type.cast(shape.constructor.newInstance(args));
		}
		catch (InvocationTargetException e) {
			throw new ProtocolException("malformed " + type.getSimpleName() + ": " + e.getCause().getMessage());
		}
		catch (ReflectiveOperationException e) {
			throw new IllegalStateException("cannot make " + type.getSimpleName() + ": " + e, e);
		}
	}

	/** Checks, once per type, that every field has a type this codec writes. */
	static void check(Class<?> type) {
		shape(type);
	}

	/** @return the message types, in their index order */
	static List<Class<?>> messageTypes() {
		return MESSAGE_TYPES;
	}

	private static void writeValue(ByteBuf out, Type type, Object value) {
		Class<?> raw = raw(type);
		if (raw == int.class) {
			out.writeInt((Integer) value);
		}
		else if (raw == long.class) {
			out.writeLong((Long) value);
		}
		else if (raw == boolean.class) {
			out.writeBoolean((Boolean) value);
		}
		else if (raw == Integer.class) {
			out.writeInt((Integer) value);
		}
		else if (raw == Long.class) {
			out.writeLong((Long) value);
		}
		else if (raw == String.class) {
			byte[] b = ((String) value).getBytes(StandardCharsets.UTF_8);
			out.writeInt(b.length);
			out.writeBytes(b);
		}
		else if (raw == byte[].class) {
			byte[] b = (byte[]) value;
			out.writeInt(b.length);
			out.writeBytes(b);
		}
		else if (raw == int[].class) {
			int[] v = (int[]) value;
			out.writeInt(v.length);
			out.ensureWritable(4 * v.length);
			for (int x : v) {
				out.writeInt(x);
			}
		}
		else if (raw == long[].class) {
			long[] v = (long[]) value;
			out.writeInt(v.length);
			out.ensureWritable(8 * v.length);
			for (long x : v) {
				out.writeLong(x);
			}
		}
		else if (raw.isEnum()) {
			out.writeByte(((Enum<?>) value).ordinal());
		}
		else if (raw == List.class) {
			Type element = ((ParameterizedType) type).getActualTypeArguments()[0];
			List<?> list = (List<?>) value;
			out.writeInt(list.size());
			for (Object e : list) {
				writeValue(out, element, e);
			}
		}
		else if (raw == RoomClaim.class) {
			RoomClaim claim = (RoomClaim) value;
			writeValue(out, byte[].class, claim.proof());
			writeValue(out, byte[].class, claim.handoff());
		}
		else if (raw.isRecord()) {
			write(out, (Record) value);
		}
		else {
			throw new IllegalStateException("no wire form for " + type);
		}
	}

	private static Object readValue(ByteBuf in, Type type, Class<?> owner, String field) {
		Class<?> raw = raw(type);
		if (raw == int.class || raw == Integer.class) {
			need(in, 4, owner, field);
			return in.readInt();
		}
		if (raw == long.class || raw == Long.class) {
			need(in, 8, owner, field);
			return in.readLong();
		}
		if (raw == boolean.class) {
			need(in, 1, owner, field);
			int b = in.readUnsignedByte();
			if (b > 1) {
				throw malformed(owner, field, "boolean " + b + " (expected: 0 or 1)");
			}
			return b == 1;
		}
		if (raw == String.class || raw == byte[].class) {
			int n = count(in, 1, owner, field);
			byte[] b = new byte[n];
			in.readBytes(b);
			return raw == String.class ? new String(b, StandardCharsets.UTF_8) : b;
		}
		if (raw == int[].class) {
			int[] v = new int[count(in, 4, owner, field)];
			for (int i = 0; i < v.length; i++) {
				v[i] = in.readInt();
			}
			return v;
		}
		if (raw == long[].class) {
			long[] v = new long[count(in, 8, owner, field)];
			for (int i = 0; i < v.length; i++) {
				v[i] = in.readLong();
			}
			return v;
		}
		if (raw.isEnum()) {
			need(in, 1, owner, field);
			Object[] constants = raw.getEnumConstants();
			int ordinal = in.readUnsignedByte();
			if (ordinal >= constants.length) {
				throw malformed(owner, field, raw.getSimpleName() + " " + ordinal + " (expected: 0.."
						+ (constants.length - 1) + ")");
			}
			return constants[ordinal];
		}
		if (raw == List.class) {
			Type element = ((ParameterizedType) type).getActualTypeArguments()[0];
			// Every element takes at least one byte: the count cannot promise more elements than bytes left.
			int n = count(in, 1, owner, field);
			List<Object> list = new ArrayList<>(n);
			for (int i = 0; i < n; i++) {
				list.add(readValue(in, element, owner, field + "[" + i + "]"));
			}
			return list;
		}
		if (raw == RoomClaim.class) {
			byte[] proof = (byte[]) readValue(in, byte[].class, owner, field + ".proof");
			byte[] handoff = (byte[]) readValue(in, byte[].class, owner, field + ".handoff");
			try {
				return new RoomClaim(proof, handoff);
			}
			catch (IllegalArgumentException e) {
				throw malformed(owner, field, e.getMessage());
			}
		}
		if (raw.isRecord()) {
			return read(in, raw);
		}
		throw new IllegalStateException("no wire form for " + type);
	}

	/** Reads a count of elements of {@code size} bytes each, checked against the bytes left. */
	private static int count(ByteBuf in, int size, Class<?> owner, String field) {
		need(in, 4, owner, field);
		int n = in.readInt();
		if (n < 0 || (long) n * size > in.readableBytes()) {
			throw malformed(owner, field, "count " + n + " with " + in.readableBytes() + " bytes left");
		}
		return n;
	}

	private static void need(ByteBuf in, int bytes, Class<?> owner, String field) {
		if (in.readableBytes() < bytes) {
			throw malformed(owner, field, "truncated (" + in.readableBytes() + " of " + bytes + " bytes)");
		}
	}

	private static ProtocolException malformed(Class<?> owner, String field, String what) {
		return new ProtocolException("malformed " + owner.getSimpleName() + "." + field + ": " + what);
	}

	private static Class<?> raw(Type type) {
		return type instanceof ParameterizedType p ? (Class<?>) p.getRawType() : (Class<?>) type;
	}

	private static Shape shape(Class<?> type) {
		Shape s = SHAPES.get(type);
		if (s == null) {
			// Not computeIfAbsent: a record's shape makes its nested records' shapes first.
			s = Shape.of(type);
			SHAPES.putIfAbsent(type, s);
		}
		return s;
	}

	/** A record type's components, their accessors and its canonical constructor. */
	private record Shape(RecordComponent[] components, MethodHandle[] accessors, Constructor<?> constructor) {

		static Shape of(Class<?> type) {
			if (!type.isRecord()) {
				throw new IllegalStateException(type + " is not a record");
			}
			RecordComponent[] components = type.getRecordComponents();
			MethodHandle[] accessors = new MethodHandle[components.length];
			Class<?>[] types = new Class<?>[components.length];
			MethodHandles.Lookup lookup = MethodHandles.publicLookup();
			try {
				for (int i = 0; i < components.length; i++) {
					accessors[i] = lookup.unreflect(components[i].getAccessor());
					types[i] = components[i].getType();
					checkType(components[i].getGenericType(), type);
				}
				return new Shape(components, accessors, type.getDeclaredConstructor(types));
			}
			catch (ReflectiveOperationException e) {
				throw new IllegalStateException("cannot encode " + type + ": " + e, e);
			}
		}

		private static void checkType(Type t, Class<?> owner) {
			Class<?> raw = raw(t);
			if (raw.isPrimitive() ? raw == int.class || raw == long.class || raw == boolean.class
					: raw == Integer.class || raw == Long.class || raw == String.class || raw == byte[].class
							|| raw == int[].class || raw == long[].class || raw.isEnum() || raw == RoomClaim.class) {
				return;
			}
			if (raw == List.class && t instanceof ParameterizedType p) {
				checkType(p.getActualTypeArguments()[0], owner);
				return;
			}
			if (raw.isRecord()) {
				shape(raw);
				return;
			}
			throw new IllegalStateException(owner.getSimpleName() + " has a field of type " + t
					+ " that the UCX transport's codec does not write: add its wire form to RecordCodec");
		}
	}
}
