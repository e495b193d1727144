package io.kvferry.transport.netty;

import static io.kvferry.transport.netty.Loopback.TIMEOUT;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.DataInputStream;
import java.io.IOException;
import java.net.Socket;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import io.kvferry.test.RecordingHandler;
import io.kvferry.test.Samples;
import io.kvferry.test.Sent;
import io.kvferry.HostPort;
import io.kvferry.KVFerryException;
import io.kvferry.KVPoll;
import io.kvferry.MemoryRegion;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.KVTransport;
import io.kvferry.spi.RegionKind;
import io.kvferry.transport.netty.internal.KVFrameCodec;
import io.kvferry.transport.netty.internal.NettyKVConnection;
import io.kvferry.transport.netty.internal.SharedSecret;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;

/**
 * A receiver that stops reading holds the sender back at its write-buffer watermark instead of growing memory. The
 * receiver is a plain socket that completes the handshake and then really reads nothing (a kvferry channel with
 * auto-read off would still read: its decoder asks for more whenever a read produced no message), so only TCP's own
 * flow control and the sender's watermark are at work.
 */
class BackpressureTest {

	private static final int MIB = 1 << 20;

	/** A decode side that reads only when told: the handshake first, then frames on demand. */
	private static final class StalledReceiver implements AutoCloseable {
		final Socket socket;
		final DataInputStream in;

		StalledReceiver(HostPort listener) throws IOException {
			socket = new Socket();
			// A small receive window, so that the kernel holds little and the sender's watermark does the bounding.
			socket.setReceiveBufferSize(64 * 1024);
			socket.connect(new java.net.InetSocketAddress(listener.host(), listener.port()), (int) TIMEOUT.toMillis());
			socket.setSoTimeout((int) TIMEOUT.toMillis());
			write(KVFrameCodec.encodePreface(UnpooledByteBufAllocator.DEFAULT, KVMessage.PROTOCOL_VERSION));
			write(KVFrameCodec.encodeAuth(UnpooledByteBufAllocator.DEFAULT,
					new KVFrameCodec.Auth(false, new byte[SharedSecret.NONCE_LENGTH], 16 << 20)));
			in = new DataInputStream(socket.getInputStream());
			in.readNBytes(KVFrameCodec.PREFACE_LENGTH + KVFrameCodec.FRAME_PREFIX_LENGTH
					+ KVFrameCodec.AUTH_MIN_BODY_LENGTH);
		}

		private void write(ByteBuf buf) throws IOException {
			try {
				byte[] bytes = new byte[buf.readableBytes()];
				buf.readBytes(bytes);
				socket.getOutputStream().write(bytes);
			}
			finally {
				buf.release();
			}
		}

		/** Reads frames until a control frame of {@code type} (heartbeats skipped); @return payload bytes of data frames */
		long readUntil(int type, MemoryRegion firstPayloadInto) throws IOException {
			long payload = 0;
			boolean first = true;
			for (;;) {
				int length = in.readInt();
				int frameType = in.readUnsignedByte();
				byte[] body = in.readNBytes(length - 1);
				if (frameType == KVFrameCodec.TYPE_DATA) {
					int bytes = body.length - KVFrameCodec.DATA_HEADER_LENGTH;
					payload += bytes;
					if (first) {
						ByteBuf view = firstPayloadInto.wrap(0, bytes);
						view.setBytes(0, body, KVFrameCodec.DATA_HEADER_LENGTH, bytes);
						view.release();
						first = false;
					}
				}
				else if (frameType == type) {
					return payload;
				}
			}
		}

		@Override
		public void close() throws IOException {
			socket.close();
		}
	}

	private static NettyKVConnection accept(CompletableFuture<KVConnection> accepted) throws Exception {
		return (NettyKVConnection) accepted.get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
	}

	@Test
	void slowReceiverMakesTheSenderUnwritableAndBoundsWhatNettyHolds() throws Exception {
		NettyKVTransport transport = NettyKVTransport.create().writeBufferWaterMark(4 * MIB, 8 * MIB);
		CompletableFuture<KVConnection> accepted = new CompletableFuture<>();
		RecordingHandler handler = new RecordingHandler();
		KVTransport.Listener listener = transport.listen(new HostPort("127.0.0.1", 0), c -> {
			accepted.complete(c);
			return handler;
		}).block(TIMEOUT);
		try (StalledReceiver decode = new StalledReceiver(listener.address())) {
			NettyKVConnection sender = accept(accepted);
			MemoryRegion src = Samples.randomRegion(MIB, 21);
			CountDownLatch unwritable = new CountDownLatch(1);
			sender.channel().pipeline().addLast(new ChannelInboundHandlerAdapter() {
				@Override
				public void channelWritabilityChanged(ChannelHandlerContext ctx) {
					if (!ctx.channel().isWritable()) {
						unwritable.countDown();
					}
					ctx.fireChannelWritabilityChanged();
				}
			});

			for (int i = 0; i < 256; i++) {
				sender.send(new DataBlock(new DataHeader(1, RegionKind.KV, 0, 0, MIB, MIB, 1), src.address(), MIB));
			}
			CompletableFuture<Void> last = Sent.now(sender, new KVMessage.AbortAck(1)).toFuture();

			assertThat(unwritable.await(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)).as("sender became unwritable")
					.isTrue();
			// Runs after the drain that the last send scheduled: what Netty holds is now as large as it gets.
			long inNetty = sender.channel().eventLoop().submit(sender::pendingOutboundBytes)
					.get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
			// Bounded by the high watermark plus one frame (and the frames' bookkeeping), whatever the kernel took.
			assertThat(inNetty).isLessThanOrEqualTo(9L * MIB + 64 * 1024);
			assertThat(sender.queuedBytes()).as("still queued as descriptors").isGreaterThan(200L * MIB);
			assertThat(last).isNotDone();

			// The receiver reads again: everything arrives, in order, and the queue empties.
			MemoryRegion first = MemoryRegion.allocate(MIB, 1);
			assertThat(decode.readUntil(KVFrameCodec.TYPE_ABORT_ACK, first)).isEqualTo(256L * MIB);
			StepVerifier.create(reactor.core.publisher.Mono.fromFuture(last)).expectComplete().verify(TIMEOUT);
			assertThat(sender.queuedBytes()).isZero();
			assertThat(Samples.read(first, 0, MIB)).isEqualTo(Samples.read(src, 0, MIB));
		}
		finally {
			transport.disposeNow(TIMEOUT);
		}
	}

	@Test
	void closingMidStreamFailsPendingSendsAndCallsOnCloseOnce() throws Exception {
		NettyKVTransport transport = NettyKVTransport.create().writeBufferWaterMark(MIB, 2 * MIB);
		CompletableFuture<KVConnection> accepted = new CompletableFuture<>();
		RecordingHandler handler = new RecordingHandler();
		KVTransport.Listener listener = transport.listen(new HostPort("127.0.0.1", 0), c -> {
			accepted.complete(c);
			return handler;
		}).block(TIMEOUT);
		try {
			NettyKVConnection sender;
			reactor.core.publisher.Mono<Void> pending;
			try (StalledReceiver decode = new StalledReceiver(listener.address())) {
				sender = accept(accepted);
				MemoryRegion src = Samples.randomRegion(MIB, 22);
				for (int i = 0; i < 64; i++) {
					sender.send(new DataBlock(new DataHeader(1, RegionKind.KV, 0, 0, MIB, MIB, 1), src.address(),
							MIB));
				}
				pending = Sent.now(sender, new KVMessage.Status(1, KVPoll.FAILED, 0, "late"));
				// The receiver goes away with unread bytes: the sender sees a reset or a close mid-stream.
			}
			StepVerifier.create(pending)
					.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(KVFerryException.class)
							.hasMessageContaining("closed before the message was written"))
					.verify(TIMEOUT);
			handler.awaitClose(TIMEOUT);
			assertThat(handler.closeReasons).hasSize(1);
			assertThat(sender.queuedBytes()).isZero();
			assertThat(sender.isActive()).isFalse();
		}
		finally {
			transport.disposeNow(TIMEOUT);
		}
	}
}
