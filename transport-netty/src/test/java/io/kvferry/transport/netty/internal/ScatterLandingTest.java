package io.kvferry.transport.netty.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.Pipe;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.PayloadSink;
import io.kvferry.spi.RegionKind;
import io.kvferry.spi.ScatterHeader;
import io.kvferry.transport.netty.internal.KVFrameDecoderTest.LandingSink;
import io.kvferry.transport.netty.internal.KVFrameDecoderTest.Recorder;
import io.kvferry.transport.netty.internal.KVFrameDecoderTest.Stream;
import io.kvferry.transport.netty.internal.frame.ScatterCodec;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.channel.nio.NioIoHandler;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A scatter frame's pieces read straight into their destinations: {@link KVFrameDecoder} offers the next pieces as a
 * {@link ScatterZone}, one scattering read fills it, and each piece's sink is told what landed in it, in payload
 * order, as if the bytes had been written; on an {@link EmbeddedChannel} with a pipe standing in for the socket, then
 * over a real socket read by {@link LandingNioSocketChannel}.
 */
class ScatterLandingTest {

	private static final int MAX = 1 << 20;

	private final Recorder recorder = new Recorder();
	private final KVFrameDecoder decoder = new KVFrameDecoder(1, MAX, recorder);
	private final EmbeddedChannel channel = new EmbeddedChannel(decoder);
	private final Map<DataHeader, LandingSink> sinks = new HashMap<>();
	private final List<ByteBuf> fed = new ArrayList<>();

	ScatterLandingTest() {
		decoder.scatterLanding(true);
		recorder.sinks = h -> sinks.computeIfAbsent(h, k -> new LandingSink((int) h.payloadLength()));
	}

	@AfterEach
	void everyBufferIsReleased() {
		channel.finishAndReleaseAll();
		assertThat(fed).allSatisfy(b -> assertThat(b.refCnt()).isZero());
		sinks.values().forEach(s -> {
			if (s.memory.refCnt() > 0) {
				s.memory.release();
			}
		});
	}

	@Test
	void oneScatteringReadLandsTheNextPiecesEachInPlaceAndTheirSinksAreToldInOrder() throws Exception {
		ScatterHeader header = header(300, 1000, 24, 700);
		byte[] payload = random(2024, 1);
		byte[] stream = new Stream().preface(1).raw(frame(header, payload)).message(new KVMessage.AbortAck(7)).bytes();
		int payloadStart = payloadStart(header, payload);

		feed(Arrays.copyOfRange(stream, 0, payloadStart + 100), 9);
		ByteBuf zone = decoder.landingZone(1, MAX);
		assertThat(zone).isInstanceOf(ScatterZone.class);
		// The socket holds the next 1,500 bytes: the rest of piece 0, pieces 1 and 2, and 276 bytes of piece 3.
		assertThat(((ScatterZone) zone).readFrom(pipeHolding(payload, 100, 1500))).isEqualTo(1500);
		channel.writeInbound(zone);
		assertThat(zone.refCnt()).as("the decoder released the read's zone").isZero();
		feed(Arrays.copyOfRange(stream, payloadStart + 1600, stream.length), 13);

		assertThat(recorder.failure).isNull();
		int[] inPlace = { 200, 1000, 24, 276 };
		int at = 0;
		for (int i = 0; i < header.count(); i++) {
			LandingSink sink = sinks.get(header.piece(i));
			assertThat(sink.inPlace).as("bytes of piece " + i + " read in place").isEqualTo(inPlace[i]);
			assertThat(sink.bytes()).as("piece " + i).isEqualTo(Arrays.copyOfRange(payload, at, at
					+ header.length(i)));
			at += header.length(i);
		}
		List<Object> expected = new ArrayList<>(List.of("PREFACE 1"));
		for (int i = 0; i < header.count(); i++) {
			expected.add(header.piece(i));
		}
		expected.addAll(List.of("COMPLETE", "COMPLETE", "COMPLETE", "COMPLETE", new KVMessage.AbortAck(7)));
		assertThat(recorder.events).containsExactlyElementsOf(expected);
		assertThat(decoder.landingZone(1, MAX)).as("between frames").isNull();
	}

	@Test
	void aPieceWithoutASinkEndsTheZoneAndIsSkipped() throws Exception {
		ScatterHeader header = header(300, 1000, 24, 700);
		DataHeader skipped = header.piece(1);
		recorder.sinks = h -> h.equals(skipped) ? null
				: sinks.computeIfAbsent(h, k -> new LandingSink((int) h.payloadLength()));
		byte[] payload = random(2024, 2);
		byte[] stream = new Stream().preface(1).raw(frame(header, payload)).bytes();
		int payloadStart = payloadStart(header, payload);

		feed(Arrays.copyOfRange(stream, 0, payloadStart + 100), 9);
		ByteBuf zone = decoder.landingZone(1, MAX);
		assertThat(((ScatterZone) zone).readFrom(pipeHolding(payload, 100, 1500))).as("only piece 0's rest")
				.isEqualTo(200);
		channel.writeInbound(zone);
		feed(Arrays.copyOfRange(stream, payloadStart + 300, payloadStart + 400), 7);
		assertThat(decoder.landingZone(1, MAX)).as("inside the skipped piece").isNull();
		feed(Arrays.copyOfRange(stream, payloadStart + 400, stream.length), 11);

		assertThat(recorder.failure).isNull();
		assertThat(sinks.get(header.piece(0)).inPlace).isEqualTo(200);
		assertThat(sinks.get(header.piece(0)).bytes()).isEqualTo(Arrays.copyOfRange(payload, 0, 300));
		assertThat(sinks.get(header.piece(2)).bytes()).isEqualTo(Arrays.copyOfRange(payload, 1300, 1324));
		assertThat(sinks.get(header.piece(3)).bytes()).isEqualTo(Arrays.copyOfRange(payload, 1324, 2024));
		assertThat(sinks).doesNotContainKey(skipped);
	}

	@Test
	void noZoneWhereTheChannelDoesNotScatterOrTooFewBytesAreLeft() {
		ScatterHeader header = header(300, 1000, 24, 700);
		byte[] payload = random(2024, 3);
		byte[] stream = new Stream().preface(1).raw(frame(header, payload)).bytes();
		int payloadStart = payloadStart(header, payload);
		feed(Arrays.copyOfRange(stream, 0, payloadStart + 100), 9);

		assertThat(decoder.landingZone(1925, MAX)).as("1,924 payload bytes left").isNull();
		decoder.scatterLanding(false);
		assertThat(decoder.landingZone(1, MAX)).as("a channel without scattering reads").isNull();
		decoder.scatterLanding(true);
		ByteBuf zone = decoder.landingZone(1, MAX);
		assertThat(zone).isInstanceOf(ScatterZone.class);
		// A read that found nothing: Netty releases the buffer without passing it on, and the bytes come later through
		// the read buffer like any others.
		zone.release();
		feed(Arrays.copyOfRange(stream, payloadStart + 100, stream.length), 17);

		assertThat(recorder.failure).isNull();
		assertThat(sinks.get(header.piece(1)).bytes()).isEqualTo(Arrays.copyOfRange(payload, 300, 1300));
		assertThat(sinks.values()).allSatisfy(s -> assertThat(s.inPlace).isZero());
	}

	@Test
	void overASocketThePiecesOfALargeFrameLandInPlaceEveryByteAtItsPlace() throws Exception {
		int pieces = 256;
		int[] lengths = new int[pieces];
		Arrays.fill(lengths, 2048);
		lengths[5] = 1000;
		lengths[200] = 3000;
		ScatterHeader header = header(lengths);
		byte[] payload = random((int) header.payloadLength(), 4);
		byte[] stream = new Stream().preface(1).raw(frame(header, payload)).message(new KVMessage.AbortAck(7)).bytes();
		CountDownLatch done = new CountDownLatch(1);
		Recorder socketRecorder = new Recorder();
		Map<DataHeader, LandingSink> socketSinks = new HashMap<>();
		socketRecorder.sinks = h -> socketSinks.computeIfAbsent(h, k -> new LandingSink((int) h.payloadLength()));
		EventLoopGroup loops = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
		try {
			Channel server = new ServerBootstrap().group(loops).channel(LandingNioServerSocketChannel.class)
					.childHandler(new ChannelInitializer<>() {
						@Override
						protected void initChannel(Channel ch) {
							KVFrameDecoder d = new KVFrameDecoder(1, MAX, new Latched(socketRecorder, done));
							d.scatterLanding(ch instanceof LandingNioSocketChannel);
							ch.pipeline().addLast(d);
							ch.config().setRecvByteBufAllocator(new LandingRecvByteBufAllocator(
									ch.config().getRecvByteBufAllocator(), d));
						}
					}).bind("127.0.0.1", 0).sync().channel();
			try (SocketChannel peer = SocketChannel.open((InetSocketAddress) server.localAddress())) {
				ByteBuffer out = ByteBuffer.wrap(stream);
				while (out.hasRemaining()) {
					peer.write(out);
				}
				assertThat(done.await(30, TimeUnit.SECONDS)).as("the frame and the message after it arrived").isTrue();
			}
			finally {
				server.close().sync();
			}
		}
		finally {
			loops.shutdownGracefully(0, 2, TimeUnit.SECONDS).sync();
		}

		assertThat(socketRecorder.failure).isNull();
		long inPlace = 0;
		int at = 0;
		for (int i = 0; i < pieces; i++) {
			LandingSink sink = socketSinks.get(header.piece(i));
			inPlace += sink.inPlace;
			assertThat(sink.bytes()).as("piece " + i).isEqualTo(Arrays.copyOfRange(payload, at, at + lengths[i]));
			at += lengths[i];
		}
		assertThat(inPlace).as("bytes read straight into the pieces").isGreaterThanOrEqualTo(
				header.payloadLength() - 4 * LandingRecvByteBufAllocator.MIN_LANDING);
		assertThat(socketRecorder.events).last().isEqualTo(new KVMessage.AbortAck(7));
	}

	/** Hands every event to a recorder, and counts down once a message or a failure arrived. */
	private record Latched(Recorder recorder, CountDownLatch done) implements KVFrameDecoder.Listener {

		@Override
		public void onPreface(int version) {
			recorder.onPreface(version);
		}

		@Override
		public void onMessage(KVMessage message) {
			recorder.onMessage(message);
			done.countDown();
		}

		@Override
		public void onHeartbeat() {
			recorder.onHeartbeat();
		}

		@Override
		public void onAuth(KVFrameCodec.Auth auth) {
			recorder.onAuth(auth);
		}

		@Override
		public void onAuthProof(byte[] proof) {
			recorder.onAuthProof(proof);
		}

		@Override
		public PayloadSink onData(DataHeader header) {
			return recorder.onData(header);
		}

		@Override
		public void onFailure(Throwable cause) {
			recorder.onFailure(cause);
			done.countDown();
		}
	}

	/** Pieces of room 7, one per region in ascending order, each at offset 64 of its region. */
	private static ScatterHeader header(int... lengths) {
		int[] regions = new int[lengths.length];
		long[] offsets = new long[lengths.length];
		for (int i = 0; i < lengths.length; i++) {
			regions[i] = i;
			offsets[i] = 64;
		}
		return new ScatterHeader(7, RegionKind.KV, lengths.length, regions, offsets, lengths);
	}

	private static byte[] frame(ScatterHeader header, byte[] payload) {
		ByteBuf head = ScatterCodec.encode(UnpooledByteBufAllocator.DEFAULT, header, 0, header.count(),
				payload.length);
		try {
			byte[] h = ByteBufUtil.getBytes(head);
			byte[] frame = Arrays.copyOf(h, h.length + payload.length);
			System.arraycopy(payload, 0, frame, h.length, payload.length);
			return frame;
		}
		finally {
			head.release();
		}
	}

	private static int payloadStart(ScatterHeader header, byte[] payload) {
		return new Stream().preface(1).raw(frame(header, payload)).bytes().length - payload.length;
	}

	/** A pipe whose read end holds {@code length} bytes of {@code bytes} from {@code from}: the socket's stand-in. */
	private static Pipe.SourceChannel pipeHolding(byte[] bytes, int from, int length) throws Exception {
		Pipe pipe = Pipe.open();
		ByteBuffer b = ByteBuffer.wrap(bytes, from, length);
		while (b.hasRemaining()) {
			pipe.sink().write(b);
		}
		pipe.sink().close();
		return pipe.source();
	}

	private void feed(byte[] bytes, int size) {
		KVFrameDecoderTest.feed(channel, fed, bytes, size);
	}

	private static byte[] random(int n, long seed) {
		byte[] b = new byte[n];
		new Random(seed).nextBytes(b);
		return b;
	}
}
