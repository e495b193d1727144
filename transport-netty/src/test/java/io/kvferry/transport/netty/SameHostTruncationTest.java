package io.kvferry.transport.netty;

import static io.kvferry.transport.netty.Loopback.TIMEOUT;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.RandomAccessFile;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import io.kvferry.HostPort;
import io.kvferry.MemoryRegion;
import io.kvferry.spi.CloseReason;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.KVTransport;
import io.kvferry.spi.RegionKind;
import io.kvferry.test.RecordingHandler;
import io.kvferry.test.RegionSink;
import io.kvferry.test.Samples;
import io.kvferry.transport.netty.internal.NettyKVConnection;
import io.kvferry.transport.netty.internal.shm.Ring;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A decode that shrinks the ring file prefill mapped (through a descriptor it kept: the name is gone by then) costs
 * only its own connection: prefill closes it with a reason that names the truncation instead of faulting in its copy,
 * and its event loop goes on serving the other connections.
 */
class SameHostTruncationTest {

	private static final int SLOT = 64 * 1024;
	private static final int SLOTS = 4;

	@TempDir
	Path dir;

	private final BlockingQueue<NettyKVConnection> accepted = new LinkedBlockingQueue<>();
	private final BlockingQueue<RecordingHandler> acceptedHandlers = new LinkedBlockingQueue<>();

	private NettyKVTransport sameHost() {
		return NettyKVTransport.create().sameHost(SameHost.AUTO).sameHostRing(SLOTS, SLOT).sameHostDirectory(dir)
				.eventLoopThreads(1);
	}

	@Test
	void aRingItsPeerTruncatedClosesThatConnectionWithTheReasonAndTheOthersCarryOn() throws Exception {
		NettyKVTransport prefill = sameHost();
		NettyKVTransport decode = sameHost();
		try {
			KVTransport.Listener listener = prefill.listen(new HostPort("127.0.0.1", 0), c -> {
				RecordingHandler h = new RecordingHandler();
				accepted.add((NettyKVConnection) c);
				acceptedHandlers.add(h);
				return h;
			}).block(TIMEOUT);
			RecordingHandler hostileDecode = new RecordingHandler();
			decode.connect(listener.address(), hostileDecode).block(TIMEOUT);
			NettyKVConnection hostile = accepted.poll(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
			RecordingHandler hostileHandler = acceptedHandlers.poll(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
			assertThat(hostile.sameHostActive()).isTrue();
			List<Path> descriptors = RingDir.descriptors(dir);
			assertThat(descriptors).as("both sides keep the unlinked file open").hasSize(2);
			try (RandomAccessFile file = new RandomAccessFile(descriptors.get(0).toFile(), "rw")) {
				file.setLength(0);
			}

			RecordingHandler otherDecode = new RecordingHandler();
			MemoryRegion dst = MemoryRegion.allocate(4 * SLOT, 1);
			AtomicLong received = new AtomicLong();
			otherDecode.sinks = h -> new RegionSink(dst, h, received, () -> {
			});
			decode.connect(listener.address(), otherDecode).block(TIMEOUT);
			NettyKVConnection other = accepted.poll(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
			assertThat(other.sameHostActive()).isTrue();
			assertThat(other.channel().eventLoop()).as("one event loop serves both").isSameAs(
					hostile.channel().eventLoop());

			MemoryRegion src = Samples.randomRegion(4 * SLOT, 11);
			DataHeader block = new DataHeader(1, RegionKind.KV, 0, 0, 4 * SLOT, 4 * SLOT, 1);
			hostile.send(new DataBlock(block, src.address(), 4 * SLOT));
			InetSocketAddress peer = (InetSocketAddress) hostile.channel().remoteAddress();
			assertThat(hostileHandler.awaitClose(TIMEOUT)).isEqualTo("the shared-memory ring of "
					+ peer.getHostString() + ":" + peer.getPort() + " was truncated (its file has 0 bytes, expected: "
					+ (Ring.HEADER_BYTES + SLOTS * SLOT) + ")");
			assertThat(hostileHandler.closes.peek().kind()).isEqualTo(CloseReason.Kind.PROTOCOL);
			assertThat(hostileDecode.awaitClose(TIMEOUT)).as("decode's side closes too").isNotNull();

			other.send(new DataBlock(block, src.address(), 4 * SLOT));
			other.send(new KVMessage.AbortAck(1));
			assertThat(otherDecode.nextMessage(TIMEOUT)).isEqualTo(new KVMessage.AbortAck(1));
			assertThat(Samples.read(dst, 0, 4 * SLOT)).isEqualTo(Samples.read(src, 0, 4 * SLOT));
			assertThat(other.isActive()).isTrue();
			assertThat(other.sameHostActive()).isTrue();
		}
		finally {
			decode.disposeNow(TIMEOUT);
			prefill.disposeNow(TIMEOUT);
		}
		RingDir.awaitUnmapped(dir);
	}
}
