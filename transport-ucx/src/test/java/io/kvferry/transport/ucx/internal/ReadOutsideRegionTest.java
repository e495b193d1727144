package io.kvferry.transport.ucx.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import io.kvferry.MemoryRegion;
import io.kvferry.spi.CloseReason;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.RegionKind;
import io.kvferry.test.RecordingHandler;
import io.kvferry.test.RegionSink;
import io.kvferry.test.Samples;
import io.kvferry.transport.ucx.UcxKVTransport;
import io.kvferry.transport.ucx.UcxTestSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

/**
 * Decode reads only inside the region prefill announced: a read request whose source leaves the announced region, or
 * that names a region never announced, closes the connection as a protocol failure naming the region, before the
 * engine hears of the block and before any byte is read; a read inside it lands byte exact. The requests come from a
 * rogue prefill that speaks the transport's handshake and active messages itself over UCX's shared-memory transports.
 */
class ReadOutsideRegionTest {

	private static final Duration T = Duration.ofSeconds(10);
	private static final int REGION = 64 << 10;

	private final MemoryRegion source = Samples.randomRegion(REGION, 5);
	private final MemoryRegion target = MemoryRegion.allocate(REGION, 1);
	private final RecordingHandler handler = new RecordingHandler();
	private final AtomicLong received = new AtomicLong();
	private final CountDownLatch landed = new CountDownLatch(1);
	private RogueUcxPrefill prefill;
	private UcxKVTransport decode;

	@BeforeAll
	static void needsUcx() {
		UcxTestSupport.assumeUcx();
	}

	@BeforeEach
	void connect() throws Exception {
		handler.sinks = h -> new RegionSink(target, h, received, new AtomicLong(), landed::countDown);
		prefill = new RogueUcxPrefill(source);
		// The rogue never answers a close: decode waits for the answer one handshake timeout before it reports.
		decode = UcxKVTransport.create().tls(RogueUcxPrefill.TLS).handshakeTimeout(Duration.ofMillis(500));
		CompletableFuture<KVConnection> connection = decode.connect(prefill.address(), handler).toFuture();
		prefill.acceptAndAnnounce();
		connection.get(T.toMillis(), TimeUnit.MILLISECONDS);
	}

	@AfterEach
	void close() throws Exception {
		CompletableFuture<Void> stopped = decode.onDispose().toFuture();
		decode.dispose();
		// Decode's endpoint closes with a flush to the rogue, which answers only while its worker progresses.
		prefill.progress(stopped::isDone);
		prefill.close();
	}

	@Test
	void aReadInsideTheAnnouncedRegionLandsByteExact() throws Exception {
		prefill.requestRead(new DataHeader(1, RegionKind.KV, 0, 0, 4096, 4096, 3), source.address() + 8192, 0);
		prefill.progress(() -> landed.getCount() == 0);
		assertThat(Samples.read(target, 0, 3 * 4096)).isEqualTo(Samples.read(source, 8192, 3 * 4096));
		assertThat(handler.closes).isEmpty();
	}

	@ParameterizedTest(name = "{0}")
	@CsvSource(delimiter = '|', value = {
			"past the end      | 61440  | 4096 | 2 | 0 | leaves registered region 0",
			"before the start  | -8     | 4096 | 1 | 0 | leaves registered region 0",
			"a span past 2^63  | 0      | 4096 | 2147483647 | 0 | leaves registered region 0",
			"a region never announced | 0 | 4096 | 1 | 1 | names region 1 (expected: 0..0)",
			"a negative region | 0      | 4096 | 1 | -1 | names region -1 (expected: 0..0)" })
	void aReadOutsideTheAnnouncedRegionClosesTheConnectionBeforeAnyByteIsRead(String what, long offset,
			int chunkLen, int count, int region, String reason) throws Exception {
		prefill.requestRead(new DataHeader(1, RegionKind.KV, 0, 0, chunkLen, chunkLen, count),
				source.address() + offset, region);
		prefill.progress(() -> handler.closed.getCount() == 0);
		assertThat(handler.closes).singleElement().satisfies(c -> {
			assertThat(c.kind()).isEqualTo(CloseReason.Kind.PROTOCOL);
			assertThat(c.message()).contains("malformed input").contains(reason);
		});
		assertThat(handler.events).as("the engine never heard of the block").isEmpty();
		assertThat(received).hasValue(0);
		assertThat(Samples.read(target, 0, REGION)).containsOnly(0);
	}
}
