package io.kvferry.transport.ucx;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import io.kvferry.HostPort;
import io.kvferry.MemoryRegion;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVTransport;
import io.kvferry.spi.RegionKind;
import io.kvferry.test.RecordingHandler;
import io.kvferry.test.RegionSink;
import io.kvferry.test.Samples;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import reactor.core.Disposable;

/**
 * What remote keys a decode rank gets: prefill registers three regions and sends one block from the second. Over
 * shared memory (one-sided reads) decode is announced the key of that region alone, on its connection, before the read;
 * over TCP (active messages) it gets no key at all, and the block arrives the same.
 */
class UcxRemoteKeysTest {

	private static final Duration T = Duration.ofSeconds(10);
	private static final int BYTES = 256 << 10;

	@BeforeAll
	static void needsUcx() {
		UcxTestSupport.assumeUcx();
	}

	@ParameterizedTest
	@ValueSource(strings = { "shm", "tcp" })
	void decodeIsAnnouncedTheKeysOfTheRegionsItReadsAndNoOthers(String kind) throws Exception {
		boolean shm = kind.equals("shm");
		UcxKVTransport prefill = shm ? UcxTestSupport.sharedMemory() : UcxTestSupport.tcp();
		UcxKVTransport decode = shm ? UcxTestSupport.sharedMemory() : UcxTestSupport.tcp();
		List<MemoryRegion> regions = List.of(Samples.randomRegion(BYTES, 1), Samples.randomRegion(BYTES, 2),
				Samples.randomRegion(BYTES, 3));
		MemoryRegion target = MemoryRegion.allocate(BYTES, 1);
		try {
			Disposable registered = prefill.register(regions).block(T);
			AtomicReference<KVConnection> accepted = new AtomicReference<>();
			KVTransport.Listener listener = prefill.listen(new HostPort("127.0.0.1", 0), c -> {
				accepted.set(c);
				return new RecordingHandler();
			}).block(T);
			RecordingHandler handler = new RecordingHandler();
			CountDownLatch landed = new CountDownLatch(1);
			handler.sinks = h -> new RegionSink(target, h, new AtomicLong(), new AtomicLong(), landed::countDown);
			decode.connect(listener.address(), handler).block(T);

			DataHeader h = new DataHeader(1, RegionKind.KV, 0, 0, 64 << 10, 64 << 10, 2);
			accepted.get().send(new DataBlock(h, regions.get(1).address() + 4096, 64 << 10));
			assertThat(landed.await(T.toMillis(), TimeUnit.MILLISECONDS)).as("the block landed").isTrue();
			assertThat(Samples.read(target, 0, 128 << 10)).isEqualTo(Samples.read(regions.get(1), 4096, 128 << 10));

			UcxStats stats = decode.stats();
			if (shm) {
				assertThat(stats.remoteKeys()).as("keys announced").isEqualTo(1);
				assertThat(stats.bytesRead()).isEqualTo(128 << 10);
			}
			else {
				assertThat(stats.remoteKeys()).as("keys announced").isZero();
				assertThat(stats.bytesInMessages()).isEqualTo(128 << 10);
			}
			listener.dispose();
			registered.dispose();
		}
		finally {
			prefill.disposeNow(T);
			decode.disposeNow(T);
		}
	}
}
