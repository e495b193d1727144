package io.kvferry.transport.ucx;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;

import io.kvferry.MemoryRegion;
import io.kvferry.test.Samples;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.openucx.jucx.UcxUtils;
import org.openucx.jucx.ucp.UcpConstants;
import org.openucx.jucx.ucp.UcpContext;
import org.openucx.jucx.ucp.UcpEndpoint;
import org.openucx.jucx.ucp.UcpEndpointParams;
import org.openucx.jucx.ucp.UcpMemMapParams;
import org.openucx.jucx.ucp.UcpMemory;
import org.openucx.jucx.ucp.UcpParams;
import org.openucx.jucx.ucp.UcpRemoteKey;
import org.openucx.jucx.ucp.UcpRequest;
import org.openucx.jucx.ucp.UcpWorker;
import org.openucx.jucx.ucp.UcpWorkerParams;
import org.openucx.jucx.ucs.UcsConstants;

/**
 * What the transport rests on, through JUCX and the system's UCX alone: two workers of one process, connected by
 * worker address over UCX's TCP and shared-memory transports, move an active message, a put and a get of registered
 * memory, byte exact. Fails (rather than skips) here where UCX is required and this JUCX cannot drive it.
 */
class UcxLoopbackSmokeTest {

	private static final int BYTES = 8 << 20;

	@BeforeAll
	static void needsUcx() {
		UcxTestSupport.assumeUcx();
	}

	@ParameterizedTest
	@ValueSource(strings = { "tcp", "posix,cma,self" })
	void anActiveMessageAPutAndAGetArriveByteExact(String tls) throws Exception {
		try (UcpContext context = new UcpContext(new UcpParams().requestAmFeature().requestRmaFeature()
				.setConfig("TLS", tls).setConfig("NET_DEVICES", "lo"));
				UcpWorker a = context.newWorker(new UcpWorkerParams());
				UcpWorker b = context.newWorker(new UcpWorkerParams())) {
			UcpEndpoint ab = a.newEndpoint(new UcpEndpointParams().setUcpAddress(b.getAddress()));
			MemoryRegion source = Samples.randomRegion(BYTES, 17);
			MemoryRegion target = MemoryRegion.allocate(BYTES, 1);
			ByteBuffer header = ByteBuffer.allocateDirect(8).putLong(0, 42);

			// An active message with a header and 4 KiB of payload.
			AtomicLong got = new AtomicLong(-1);
			byte[] payload = new byte[4096];
			b.setAmRecvHandler(7, (headerAddress, headerSize, data, reply) -> {
				if (data.isDataValid() && data.getLength() == payload.length) {
					UcxUtils.getByteBufferView(data.getDataAddress(), data.getLength()).get(payload);
					got.set(UcxUtils.getByteBufferView(headerAddress, headerSize).getLong(0));
				}
				return UcsConstants.STATUS.UCS_OK;
			}, UcpConstants.UCP_AM_FLAG_WHOLE_MSG);
			ab.sendAmNonBlocking(7, UcxUtils.getAddress(header), 8, source.address(), payload.length, 0, null);
			progress(() -> got.get() >= 0, a, b);
			assertThat(got).hasValue(42);
			assertThat(payload).isEqualTo(Samples.read(source, 0, payload.length));

			// A get from registered memory, then a put into it.
			try (UcpMemory registered = context.memoryMap(new UcpMemMapParams().setAddress(source.address())
					.setLength(BYTES));
					UcpRemoteKey key = ab.unpackRemoteKey(registered.getRemoteKeyBuffer())) {
				UcpRequest get = ab.getNonBlocking(source.address(), key, target.address(), BYTES, null);
				progress(get::isCompleted, a, b);
				assertThat(Samples.read(target, 0, BYTES)).isEqualTo(Samples.read(source, 0, BYTES));

				MemoryRegion other = Samples.randomRegion(BYTES, 18);
				ab.putNonBlocking(other.address(), BYTES, source.address(), key, null);
				UcpRequest flush = ab.flushNonBlocking(null);
				progress(flush::isCompleted, a, b);
				assertThat(Samples.read(source, 0, BYTES)).isEqualTo(Samples.read(other, 0, BYTES));
			}
			progress(ab.closeNonBlockingFlush()::isCompleted, a, b);
		}
	}

	private static void progress(BooleanSupplier done, UcpWorker... workers) throws Exception {
		long deadline = System.nanoTime() + 10_000_000_000L;
		while (!done.getAsBoolean()) {
			assertThat(System.nanoTime()).as("UCX progress deadline").isLessThan(deadline);
			for (UcpWorker w : workers) {
				w.progress();
			}
		}
	}
}
