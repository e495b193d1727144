package io.kvferry.transport.netty.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.PayloadSink;
import io.kvferry.spi.RegionKind;
import io.kvferry.transport.netty.internal.KVFrameCodec;
import io.kvferry.transport.netty.internal.KVFrameDecoder;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import org.junit.jupiter.api.Test;

/**
 * The raw peer is the other end of tests that judge decode by the bytes it receives, so its own stream must stay
 * framed: a frame its script writes in parts is never split by what the peer writes on its own.
 */
class RawPrefillPeerTest {

	private static final Duration T = Duration.ofSeconds(10);
	private static final int PAYLOAD = 1024;
	private static final byte FILL = 0x22;

	@Test
	void aHeartbeatThatComesWhileTheScriptOwesPayloadBytesIsAnsweredAfterTheFrame() throws Exception {
		// The first abort opens a frame and writes half its payload, the second writes the rest: decode's heartbeat,
		// sent between them, reaches the peer while the frame is open.
		RawPrefillPeer.Script script = new RawPrefillPeer.Script() {
			private boolean opened;

			@Override
			public void onAbort(RawPrefillPeer.Wire wire, KVMessage.Abort abort) {
				if (!opened) {
					opened = true;
					wire.header(new DataHeader(abort.room(), RegionKind.KV, 0, 0, PAYLOAD, 0, 1));
				}
				wire.payload(PAYLOAD / 2, FILL);
			}

			@Override
			public boolean answersHeartbeats() {
				return true;
			}
		};
		Received received = new Received();
		// The peer's layout is never asked for: no HELLO comes.
		try (RawPrefillPeer peer = new RawPrefillPeer(null, true, script);
				Socket socket = new Socket("127.0.0.1", peer.address().port())) {
			socket.setSoTimeout((int) T.toMillis());
			ByteBufAllocator alloc = ByteBufAllocator.DEFAULT;
			OutputStream out = socket.getOutputStream();
			out.write(bytes(KVFrameCodec.encodePreface(alloc, KVMessage.PROTOCOL_VERSION)));
			out.write(bytes(KVFrameCodec.encode(alloc, new KVMessage.Abort(1, "open"), 1 << 20)));
			out.write(bytes(KVFrameCodec.encodeHeartbeat(alloc)));
			out.write(bytes(KVFrameCodec.encode(alloc, new KVMessage.Abort(1, "finish"), 1 << 20)));
			out.flush();

			// Decode's own decoder reads what the peer wrote, byte by byte, until the heartbeat's answer or a failure.
			EmbeddedChannel decoder = new EmbeddedChannel(new KVFrameDecoder(KVMessage.PROTOCOL_VERSION, 1 << 20,
					received));
			InputStream in = socket.getInputStream();
			byte[] chunk = new byte[4096];
			while (received.heartbeats == 0 && received.failure == null) {
				int n = in.read(chunk);
				assertThat(n).as("bytes before the peer closed").isPositive();
				for (int i = 0; i < n; i++) {
					decoder.writeInbound(Unpooled.wrappedBuffer(chunk, i, 1));
				}
			}
			decoder.finishAndReleaseAll();
		}
		assertThat(received.failure).as("what the decoder made of the peer's stream").isNull();
		assertThat(received.frames).containsExactly("AUTH", "DATA room 1: " + PAYLOAD + " bytes", "HEARTBEAT");
		assertThat(received.payload).as("payload bytes that are not the script's").allMatch(b -> b == FILL)
				.hasSize(PAYLOAD);
	}

	private static byte[] bytes(ByteBuf frame) {
		try {
			return ByteBufUtil.getBytes(frame);
		}
		finally {
			frame.release();
		}
	}

	/** What the decoder reports, in order; on the test's thread (the embedded channel's). */
	private static final class Received implements KVFrameDecoder.Listener {
		final List<String> frames = new ArrayList<>();
		final List<Byte> payload = new ArrayList<>();
		int heartbeats;
		Throwable failure;

		@Override
		public void onPreface(int version) {
		}

		@Override
		public void onMessage(KVMessage message) {
			frames.add(message.getClass().getSimpleName());
		}

		@Override
		public void onHeartbeat() {
			heartbeats++;
			frames.add("HEARTBEAT");
		}

		@Override
		public void onAuth(KVFrameCodec.Auth auth) {
			frames.add("AUTH");
		}

		@Override
		public void onAuthProof(byte[] proof) {
			frames.add("AUTH_PROOF");
		}

		@Override
		public PayloadSink onData(DataHeader header) {
			frames.add("DATA room " + header.room() + ": " + header.payloadLength() + " bytes");
			return new PayloadSink() {
				@Override
				public void write(ByteBuf segment) {
					for (int i = segment.readerIndex(); i < segment.writerIndex(); i++) {
						payload.add(segment.getByte(i));
					}
				}

				@Override
				public void complete() {
				}
			};
		}

		@Override
		public void onFailure(Throwable cause) {
			failure = cause;
		}
	}
}
