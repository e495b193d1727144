package io.kvferry.transport.netty.it;

import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

import io.kvferry.HostPort;
import io.kvferry.spi.Block;
import io.kvferry.spi.CloseReason;
import io.kvferry.spi.ConnectionHandler;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.KVTransport;
import io.kvferry.spi.PayloadSink;
import io.kvferry.spi.ScatterBlock;
import io.kvferry.spi.SendGate;
import io.kvferry.test.ForwardingConnection;
import io.kvferry.transport.netty.internal.NettyKVConnection;
import io.netty.buffer.ByteBuf;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * A {@link KVTransport} over Netty's whose listeners' connections (prefill's side) can be cut after a number of data
 * frames: once armed with {@link #cutAfter}, the frame that count reaches and every later one are dropped, and that
 * frame's channel is closed from another thread. Frames before the cut may still sit in the channel's buffers then:
 * the close discards them wherever the socket is (between frames or inside one), as a crashed peer's would.
 *
 * <p>Decode's side can be cut too ({@link #cutDecodeAt}): inside the payload of the n-th data frame it receives, after
 * a given number of its bytes landed, decode's channel closes and the rest of that payload never lands.
 */
final class CuttingTransport implements KVTransport {

	private final KVTransport delegate;
	// Frames still to pass before the cut; negative when not armed.
	private final AtomicInteger framesLeft = new AtomicInteger(-1);
	private volatile boolean cut;
	// Decode's cut: frames still to arrive whole before the cut one, and bytes of that one that land.
	private final AtomicInteger decodeFramesLeft = new AtomicInteger(-1);
	private volatile int decodeCutBytes;
	private volatile boolean decodeCut;
	private final AtomicInteger frames = new AtomicInteger();

	CuttingTransport(KVTransport delegate) {
		this.delegate = Objects.requireNonNull(delegate, "delegate");
	}

	/** Arms the cut: the channel that sends the {@code n}-th data frame from now (0: the next) is closed. */
	void cutAfter(int n) {
		cut = false;
		framesLeft.set(n);
	}

	/**
	 * Arms decode's cut: inside the data frame {@code n} frames from now (0: the next) that decode receives, once
	 * {@code bytes} bytes of its payload landed, decode's channel closes.
	 */
	void cutDecodeAt(int n, int bytes) {
		decodeCut = false;
		decodeCutBytes = bytes;
		decodeFramesLeft.set(n);
	}

	/** Disarms both cuts; frames flow again. */
	void disarm() {
		framesLeft.set(-1);
		decodeFramesLeft.set(-1);
		cut = false;
		decodeCut = false;
	}

	/** @return data frames the listeners' connections were asked to write so far */
	int frames() {
		return frames.get();
	}

	@Override
	public Mono<Listener> listen(HostPort bindAddress, Function<KVConnection, ConnectionHandler> acceptor) {
		return delegate.listen(bindAddress, c -> acceptor.apply(new Cutting((NettyKVConnection) c)));
	}

	@Override
	public Mono<KVConnection> connect(HostPort remote, ConnectionHandler handler) {
		return delegate.connect(remote, new ConnectionHandler() {
			@Override
			public void onMessage(KVConnection connection, KVMessage message) {
				handler.onMessage(connection, message);
			}

			@Override
			public @Nullable PayloadSink onData(KVConnection connection, DataHeader header) {
				if (decodeCut) {
					return null;
				}
				PayloadSink sink = handler.onData(connection, header);
				if (sink == null || decodeFramesLeft.getAndUpdate(n -> n < 0 ? n : n - 1) != 0) {
					return sink;
				}
				decodeCut = true;
				return new CutSink(sink, (NettyKVConnection) connection, decodeCutBytes);
			}

			@Override
			public void onClose(KVConnection connection, CloseReason reason) {
				handler.onClose(connection, reason);
			}
		});
	}

	/** Passes a payload's first bytes on, then closes decode's channel; the rest of the payload never lands. */
	private static final class CutSink implements PayloadSink {

		private final PayloadSink sink;
		private final NettyKVConnection connection;
		private int left;

		CutSink(PayloadSink sink, NettyKVConnection connection, int bytes) {
			this.sink = sink;
			this.connection = connection;
			this.left = bytes;
		}

		@Override
		public void write(ByteBuf segment) {
			if (left <= 0) {
				return;
			}
			int n = Math.min(left, segment.readableBytes());
			sink.write(segment.slice(segment.readerIndex(), n));
			left -= n;
			if (left == 0) {
				connection.channel().close();
			}
		}

		@Override
		public void complete() {
			// Cut inside the payload: it never completes. A cut at or past its end closed nothing yet: close now.
			connection.channel().close();
		}
	}

	private final class Cutting extends ForwardingConnection {

		private final NettyKVConnection c;

		Cutting(NettyKVConnection c) {
			super(c);
			this.c = c;
		}

		@Override
		public void send(Block block) {
			if (block instanceof ScatterBlock s) {
				// Piece by piece, so that each piece passes the cut.
				for (int i = 0; i < s.header().count(); i++) {
					send(s.piece(i));
				}
				return;
			}
			sendData((DataBlock) block);
		}

		private void sendData(DataBlock block) {
			SendGate gate = block.gate();
			c.send(new DataBlock(block.header(), block.srcAddress(), block.srcStride(), () -> {
				if (!gate.isOpen() || cut) {
					return false;
				}
				frames.incrementAndGet();
				if (framesLeft.getAndUpdate(n -> n < 0 ? n : n - 1) == 0) {
					cut = true;
					// Not from inside the event loop's write: a crashed peer's socket closes under it.
					Schedulers.parallel().schedule(() -> c.channel().close());
					return false;
				}
				return true;
			}));
		}
	}
}
