package io.kvferry.transport.netty.internal;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.zip.CRC32;

import io.kvferry.KVPoll;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.RegionKind;
import io.kvferry.spi.ScatterHeader;
import io.kvferry.test.Samples;
import io.kvferry.transport.netty.internal.frame.ScatterCodec;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.UnpooledByteBufAllocator;

/**
 * Valid kvferry frames for fuzzing, each with the decoder events it must produce and the offsets of its length and
 * count fields, and the mutations applied to streams made of them. Deterministic: everything random comes from the
 * {@link SplittableRandom} passed in.
 */
final class FuzzCorpus {

	/** Event recorded for a heartbeat. */
	static final String HEARTBEAT = "HEARTBEAT";

	/** One valid frame: its bytes, the events it decodes to, and where its i32 counts and lengths sit. */
	record Frame(byte[] bytes, List<Object> events, int[] countOffsets) {
	}

	/** A stream to feed: its bytes and, when no mutation touched it, the events it must decode to. */
	record Input(byte[] bytes, List<Object> expected, String mutations) {
	}

	private static final int PREFACE_LENGTH = KVFrameCodec.PREFACE_LENGTH;
	private static final int BODY = KVFrameCodec.FRAME_PREFIX_LENGTH;

	private final int maxFrameLength;
	private final byte[] preface;
	private final List<Frame> frames = new ArrayList<>();
	private final Frame authWithoutSecret;

	FuzzCorpus(int maxFrameLength) {
		this.maxFrameLength = maxFrameLength;
		this.preface = take(KVFrameCodec.encodePreface(UnpooledByteBufAllocator.DEFAULT, KVMessage.PROTOCOL_VERSION));
		SplittableRandom r = new SplittableRandom(7);
		for (KVMessage m : Samples.everyMessage()) {
			message(m);
		}
		message(new KVMessage.Reject("x".repeat(1500)));
		message(new KVMessage.TransferRequest(77, r.ints(300).toArray(), 3, new int[] { 1, 2, 3 }, 4, false));
		message(new KVMessage.Status(9, KVPoll.TRANSFERRING, 1, "ü"));
		frames.add(new Frame(take(KVFrameCodec.encodeHeartbeat(UnpooledByteBufAllocator.DEFAULT)), List.of(HEARTBEAT),
				new int[0]));
		authWithoutSecret = auth(new KVFrameCodec.Auth(false, new byte[SharedSecret.NONCE_LENGTH], 16 << 20));
		auth(new KVFrameCodec.Auth(true, bytes(r, SharedSecret.NONCE_LENGTH), 16 << 20));
		// A connecting side's: the endpoint it dialled and the address it reached, two strings the mutations target.
		auth(new KVFrameCodec.Auth(true, bytes(r, SharedSecret.NONCE_LENGTH), 1 << 20,
				new DialledEndpoint("prefill-0.prefill.ns.svc.cluster.local:5000", "[2001:db8::7]:5000")));
		auth(new KVFrameCodec.Auth(true, bytes(r, SharedSecret.NONCE_LENGTH), 1 << 20,
				new DialledEndpoint("x".repeat(DialledEndpoint.MAX_LENGTH - 2) + ":1", "255.255.255.255:65535")));
		byte[] proof = bytes(r, SharedSecret.PROOF_LENGTH);
		frames.add(new Frame(take(KVFrameCodec.encodeAuthProof(UnpooledByteBufAllocator.DEFAULT, proof)),
				List.of("PROOF " + ByteBufUtil.hexDump(proof)), new int[0]));
		data(new DataHeader(1, RegionKind.KV, 0, 0, 64, 64, 1), r);
		data(new DataHeader(2, RegionKind.AUX, 3, 4096, 16, 32, 5), r);
		data(new DataHeader(3, RegionKind.STATE, 1, 0, 0, 0, 0), r);
		data(new DataHeader(4, RegionKind.KV, 7, 1 << 20, 1000, 1000, 1), r);
		data(new DataHeader(Long.MAX_VALUE, RegionKind.KV, 0, 0, 128, 512, 32), r);
		scatter(new ScatterHeader(5, RegionKind.KV, 1, new int[] { 2 }, new long[] { 2048 }, new int[] { 96 }), r);
		scatter(new ScatterHeader(6, RegionKind.KV, 3, new int[] { 0, 0, 4 }, new long[] { 0, 4096, 64 },
				new int[] { 2048, 1, 300 }), r);
		int n = 40;
		int[] regions = new int[n];
		long[] offsets = new long[n];
		int[] lengths = new int[n];
		for (int i = 0; i < n; i++) {
			regions[i] = i / 20;
			offsets[i] = 64L * (i % 20) * 3;
			lengths[i] = 1 + r.nextInt(64);
		}
		scatter(new ScatterHeader(-1, RegionKind.STATE, n, regions, offsets, lengths), r);
	}

	/** A scatter frame: its pieces' headers, all before the first payload byte, then each piece's completion. */
	private void scatter(ScatterHeader header, SplittableRandom r) {
		int payloadLength = (int) header.payloadLength();
		byte[] head = take(ScatterCodec.encode(UnpooledByteBufAllocator.DEFAULT, header, 0, header.count(),
				payloadLength));
		byte[] payload = bytes(r, payloadLength);
		byte[] bytes = new byte[head.length + payload.length];
		System.arraycopy(head, 0, bytes, 0, head.length);
		System.arraycopy(payload, 0, bytes, head.length, payload.length);
		List<Object> events = new ArrayList<>();
		for (int i = 0; i < header.count(); i++) {
			events.add(header.piece(i));
		}
		int at = 0;
		for (int i = 0; i < header.count(); i++) {
			events.add(complete(payload, at, header.length(i)));
			at += header.length(i);
		}
		// The piece count, and the first entry's region, offset (its high word) and length.
		int table = BODY + ScatterCodec.HEAD_LENGTH;
		frames.add(new Frame(bytes, events, new int[] { BODY + 9, table, table + 4, table + 12 }));
	}

	/** @return the 6 preface bytes */
	byte[] preface() {
		return preface.clone();
	}

	/** @return every frame of the corpus */
	List<Frame> frames() {
		return frames;
	}

	private void message(KVMessage m) {
		byte[] bytes = take(KVFrameCodec.encode(UnpooledByteBufAllocator.DEFAULT, m, maxFrameLength));
		frames.add(new Frame(bytes, List.of(m), countOffsets(bytes)));
	}

	private Frame auth(KVFrameCodec.Auth auth) {
		byte[] bytes = take(KVFrameCodec.encodeAuth(UnpooledByteBufAllocator.DEFAULT, auth));
		int endpointLength = BODY + 1 + SharedSecret.NONCE_LENGTH + 4;
		int addressLength = endpointLength + 4 + i32(bytes, endpointLength);
		Frame frame = new Frame(bytes, List.of(auth), new int[] { endpointLength, addressLength });
		frames.add(frame);
		return frame;
	}

	private void data(DataHeader header, SplittableRandom r) {
		byte[] head = take(KVFrameCodec.encodeDataHeader(UnpooledByteBufAllocator.DEFAULT, header));
		byte[] payload = bytes(r, (int) header.payloadLength());
		byte[] bytes = new byte[head.length + payload.length];
		System.arraycopy(head, 0, bytes, 0, head.length);
		System.arraycopy(payload, 0, bytes, head.length, payload.length);
		// region, chunkLen and count of the header
		frames.add(new Frame(bytes, List.of(header, complete(payload, 0, payload.length)),
				new int[] { BODY + 9, BODY + 21, BODY + 33 }));
	}

	/** @return the event a completed payload of these bytes records */
	static String complete(byte[] b, int offset, int length) {
		CRC32 crc = new CRC32();
		crc.update(b, offset, length);
		return "COMPLETE " + length + " crc " + Long.toHexString(crc.getValue());
	}

	/** Offsets (in the frame) of every string length and array count of a control frame, found by walking it. */
	private static int[] countOffsets(byte[] frame) {
		List<Integer> offsets = new ArrayList<>();
		int type = frame[4] & 0xff;
		int p = BODY;
		switch (type) {
			case KVFrameCodec.TYPE_HELLO:
				layout(frame, p + 4, offsets);
				break;
			case KVFrameCodec.TYPE_HELLO_ACK:
				layout(frame, p, offsets);
				break;
			case KVFrameCodec.TYPE_REJECT:
				offsets.add(p);
				break;
			case KVFrameCodec.TYPE_TRANSFER_REQUEST: {
				p += 8;
				offsets.add(p);
				p += 4 + 4 * i32(frame, p) + 4;
				offsets.add(p);
				break;
			}
			case KVFrameCodec.TYPE_STATUS:
				offsets.add(p + 8 + 1 + 4);
				break;
			case KVFrameCodec.TYPE_ABORT:
				offsets.add(p + 8);
				break;
			default:
				break;
		}
		return offsets.stream().mapToInt(Integer::intValue).toArray();
	}

	private static void layout(byte[] frame, int p, List<Integer> offsets) {
		p += 4 + 32 + 4 + 1;
		offsets.add(p);
		p += 4 + i32(frame, p) + 16;
		for (int list = 0; list < 3; list++) {
			offsets.add(p);
			p += 4 + 12 * i32(frame, p);
		}
	}

	private static int i32(byte[] b, int p) {
		return (b[p] & 0xff) << 24 | (b[p + 1] & 0xff) << 16 | (b[p + 2] & 0xff) << 8 | (b[p + 3] & 0xff);
	}

	private static void putI32(byte[] b, int p, int v) {
		if (p < 0 || p + 4 > b.length) {
			return;
		}
		b[p] = (byte) (v >>> 24);
		b[p + 1] = (byte) (v >>> 16);
		b[p + 2] = (byte) (v >>> 8);
		b[p + 3] = (byte) v;
	}

	private static byte[] take(ByteBuf buf) {
		try {
			return ByteBufUtil.getBytes(buf);
		}
		finally {
			buf.release();
		}
	}

	private static byte[] bytes(SplittableRandom r, int n) {
		byte[] b = new byte[n];
		for (int i = 0; i < n; i += 8) {
			long v = r.nextLong();
			for (int j = i; j < Math.min(n, i + 8); j++) {
				b[j] = (byte) v;
				v >>>= 8;
			}
		}
		return b;
	}

	// ---- streams and mutations ---------------------------------------------------------------------------------

	/**
	 * Makes one input for the frame decoder: a valid preface and one to five frames of any type, left intact one time
	 * in ten and otherwise mutated one to four times; or, one time in thirty, random garbage (half of it after a valid
	 * preface).
	 */
	Input next(SplittableRandom r) {
		return next(r, false);
	}

	/**
	 * Makes one input for a whole connection: like {@link #next(SplittableRandom)}, but the valid stream is a
	 * handshake without a shared secret (preface and {@code AUTH}) followed by frames other than handshake frames, and
	 * its expected events are what the engine's handler sees (messages, data headers, completed payloads).
	 */
	Input nextForConnection(SplittableRandom r) {
		return next(r, true);
	}

	private Input next(SplittableRandom r, boolean connection) {
		if (r.nextInt(30) == 0) {
			byte[] garbage = bytes(r, r.nextInt(2048));
			if (r.nextBoolean()) {
				return new Input(concat(preface, garbage), null, "garbage after preface");
			}
			return new Input(garbage, null, "garbage");
		}
		int count = 1 + r.nextInt(5);
		List<Frame> chosen = new ArrayList<>(count + 1);
		int length = preface.length;
		if (connection) {
			chosen.add(authWithoutSecret);
			length += authWithoutSecret.bytes().length;
		}
		for (int i = 0; i < count; i++) {
			Frame f = frames.get(r.nextInt(frames.size()));
			if (connection && (f.events().get(0) instanceof KVFrameCodec.Auth
					|| f.events().get(0) instanceof String e && e.startsWith("PROOF"))) {
				f = frames.get(0);
			}
			chosen.add(f);
			length += f.bytes().length;
		}
		count = chosen.size();
		byte[] stream = new byte[length];
		int[] starts = new int[count];
		System.arraycopy(preface, 0, stream, 0, preface.length);
		int p = preface.length;
		for (int i = 0; i < count; i++) {
			Frame f = chosen.get(i);
			starts[i] = p;
			System.arraycopy(f.bytes(), 0, stream, p, f.bytes().length);
			p += f.bytes().length;
		}
		if (r.nextInt(10) == 0) {
			List<Object> expected = new ArrayList<>();
			if (!connection) {
				expected.add("PREFACE " + KVMessage.PROTOCOL_VERSION);
			}
			for (Frame f : chosen) {
				for (Object e : f.events()) {
					if (!connection || !(e == HEARTBEAT || e instanceof KVFrameCodec.Auth)) {
						expected.add(e);
					}
				}
			}
			return new Input(stream, expected, "none");
		}
		StringBuilder applied = new StringBuilder();
		int mutations = 1 + r.nextInt(4);
		for (int m = 0; m < mutations; m++) {
			int which = r.nextInt(chosen.size());
			stream = mutate(r, stream, starts[which], chosen.get(which), applied);
		}
		return new Input(stream, null, applied.toString());
	}

	private byte[] mutate(SplittableRandom r, byte[] s, int frameStart, Frame frame, StringBuilder applied) {
		// Most mutations keep the preface intact so they reach the frame decoder; one in ten may hit it.
		int from = r.nextInt(10) == 0 ? 0 : Math.min(PREFACE_LENGTH, s.length);
		int span = s.length - from;
		switch (r.nextInt(11)) {
			case 0: {
				if (span > 0) {
					int at = from + r.nextInt(span);
					s[at] ^= (byte) (1 << r.nextInt(8));
					applied.append("flip@").append(at).append(' ');
				}
				return s;
			}
			case 1: {
				if (span > 0) {
					int at = from + r.nextInt(span);
					int[] values = { 0x00, 0xff, 0x7f, 0x80, 0x01, r.nextInt(256) };
					s[at] = (byte) values[r.nextInt(values.length)];
					applied.append("byte@").append(at).append(' ');
				}
				return s;
			}
			case 2: {
				int cut = r.nextInt(s.length + 1);
				applied.append("truncate@").append(cut).append(' ');
				return Arrays.copyOf(s, cut);
			}
			case 3: {
				int original = frame.bytes().length - 4;
				// 38, 46 and 646: the first data length, the fewest and most AUTH bytes (length counts the type).
				int[] values = { 0, 1, 2, 37, 38, 39, 45, 46, 646, 647, original - 1, original + 1,
					original + r.nextInt(1, 17), original - r.nextInt(1, 17), maxFrameLength, maxFrameLength + 1, maxFrameLength + 38,
					maxFrameLength + 39, Integer.MAX_VALUE, -1, r.nextInt(maxFrameLength + 64), r.nextInt() };
				putI32(s, frameStart, values[r.nextInt(values.length)]);
				applied.append("length@").append(frameStart).append(' ');
				return s;
			}
			case 4: {
				int at;
				if (frame.countOffsets().length > 0 && r.nextInt(4) != 0) {
					at = frameStart + frame.countOffsets()[r.nextInt(frame.countOffsets().length)];
				}
				else {
					at = frameStart + BODY + r.nextInt(Math.max(1, frame.bytes().length - BODY));
				}
				int body = frame.bytes().length - BODY;
				int[] values = { 0, 1, -1, 2, Integer.MAX_VALUE, Integer.MIN_VALUE, 0xffff, 0x10000, 1 << 24, body,
					body + 1, body - 1, body / 4, body / 12, r.nextInt(64), r.nextInt() };
				putI32(s, at, values[r.nextInt(values.length)]);
				applied.append("count@").append(at).append(' ');
				return s;
			}
			case 5: {
				Frame other = frames.get(r.nextInt(frames.size()));
				int cut = from + r.nextInt(span + 1);
				int otherCut = r.nextInt(other.bytes().length + 1);
				byte[] spliced = new byte[cut + other.bytes().length - otherCut];
				System.arraycopy(s, 0, spliced, 0, cut);
				System.arraycopy(other.bytes(), otherCut, spliced, cut, other.bytes().length - otherCut);
				applied.append("splice@").append(cut).append(' ');
				return spliced;
			}
			case 6: {
				int at = from + r.nextInt(span + 1);
				byte[] inserted = bytes(r, 1 + r.nextInt(16));
				applied.append("insert@").append(at).append(' ');
				return concat(Arrays.copyOf(s, at), inserted, Arrays.copyOfRange(s, at, s.length));
			}
			case 7: {
				if (span == 0) {
					return s;
				}
				int at = from + r.nextInt(span);
				int n = 1 + r.nextInt(Math.min(64, s.length - at));
				applied.append("delete@").append(at).append(' ');
				return concat(Arrays.copyOf(s, at), Arrays.copyOfRange(s, at + n, s.length));
			}
			case 8: {
				if (span == 0) {
					return s;
				}
				int at = from + r.nextInt(span);
				int n = 1 + r.nextInt(Math.min(64, s.length - at));
				applied.append("duplicate@").append(at).append(' ');
				return concat(Arrays.copyOf(s, at + n), Arrays.copyOfRange(s, at, s.length));
			}
			case 9: {
				int[] types = { 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x10, 0x11, 0x12, 0x13, 0x20,
					0x21, 0xff, r.nextInt(256) };
				if (frameStart + 4 < s.length) {
					s[frameStart + 4] = (byte) types[r.nextInt(types.length)];
				}
				applied.append("type@").append(frameStart + 4).append(' ');
				return s;
			}
			default: {
				int at = from + r.nextInt(span + 1);
				applied.append("garbage@").append(at).append(' ');
				return concat(Arrays.copyOf(s, at), bytes(r, r.nextInt(512)));
			}
		}
	}

	private static byte[] concat(byte[]... parts) {
		int n = 0;
		for (byte[] p : parts) {
			n += p.length;
		}
		byte[] out = new byte[n];
		int at = 0;
		for (byte[] p : parts) {
			System.arraycopy(p, 0, out, at, p.length);
			at += p.length;
		}
		return out;
	}
}
