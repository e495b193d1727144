package io.kvferry.transport.ucx.internal;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;

import io.kvferry.HostPort;
import io.kvferry.MemoryRegion;
import io.kvferry.spi.DataHeader;
import io.kvferry.transport.ucx.UcxDataPath;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.openucx.jucx.ucp.UcpConstants;
import org.openucx.jucx.ucp.UcpContext;
import org.openucx.jucx.ucp.UcpEndpoint;
import org.openucx.jucx.ucp.UcpEndpointParams;
import org.openucx.jucx.ucp.UcpMemMapParams;
import org.openucx.jucx.ucp.UcpMemory;
import org.openucx.jucx.ucp.UcpParams;
import org.openucx.jucx.ucp.UcpRequest;
import org.openucx.jucx.ucp.UcpWorker;
import org.openucx.jucx.ucp.UcpWorkerParams;
import org.openucx.jucx.ucs.UcsConstants;

/**
 * A prefill peer that speaks the UCX transport's handshake and active messages itself, through JUCX alone, over UCX's
 * shared-memory transports, so that a test can send what the transport itself never sends: reads of sources outside
 * the region it announced, or of a region it never announced. It registers one region, accepts one decode, answers
 * with a one-sided hello, announces the region's key as region 0 and then sends the read requests the test asks for.
 * Everything runs on the test's thread, which progresses the worker while it waits.
 */
final class RogueUcxPrefill implements AutoCloseable {

	static final String TLS = "posix,cma,self";
	private static final Duration TIMEOUT = Duration.ofSeconds(10);

	private final UcpContext context;
	private final UcpWorker worker;
	private final UcpMemory memory;
	private final MemoryRegion region;
	private final ServerSocket server;
	private final AtomicBoolean decodeReady = new AtomicBoolean();
	private UcpEndpoint endpoint;
	private long decodeId;
	private long seq;

	/** @param region the memory it registers and announces as region 0 */
	RogueUcxPrefill(MemoryRegion region) throws IOException {
		this.region = region;
		this.context = new UcpContext(new UcpParams().requestAmFeature().requestRmaFeature().setConfig("TLS", TLS));
		this.worker = context.newWorker(new UcpWorkerParams());
		this.memory = context.memoryMap(new UcpMemMapParams().setAddress(region.address()).setLength(region.length())
				.setProtection(UcpConstants.UCP_MEM_MAP_PROT_LOCAL_READ | UcpConstants.UCP_MEM_MAP_PROT_LOCAL_WRITE
						| UcpConstants.UCP_MEM_MAP_PROT_REMOTE_READ));
		// Decode's first message (a heartbeat) says it is ready: nothing is sent before it.
		worker.setAmRecvHandler(Wire.AM_ID, (header, size, data, reply) -> {
			decodeReady.set(true);
			return UcsConstants.STATUS.UCS_OK;
		}, UcpConstants.UCP_AM_FLAG_WHOLE_MSG);
		this.server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
	}

	/** @return the address a decode transport connects to */
	HostPort address() {
		return new HostPort("127.0.0.1", server.getLocalPort());
	}

	/**
	 * Answers one decode's handshake (on the calling thread, so the decode's connect must already run elsewhere),
	 * connects to its worker, waits for its first message and announces the region's key as region 0.
	 */
	void acceptAndAnnounce() throws Exception {
		try (Socket s = server.accept()) {
			s.setSoTimeout((int) TIMEOUT.toMillis());
			Handshake decode = (Handshake) Handshake.read(s.getInputStream(), "decode");
			decodeId = decode.connection();
			ByteBuffer address = worker.getAddress();
			byte[] own = new byte[address.remaining()];
			address.get(own);
			new Handshake(7, own, TLS, bootId(), false, UcxDataPath.ONE_SIDED, 5000, new byte[0], "", new byte[0])
					.write(s.getOutputStream());
			ByteBuffer theirs = ByteBuffer.allocateDirect(decode.workerAddress().length);
			theirs.put(decode.workerAddress()).flip();
			endpoint = worker.newEndpoint(new UcpEndpointParams().setUcpAddress(theirs));
		}
		progress(decodeReady::get);
		ByteBuffer key = memory.getRemoteKeyBuffer();
		ByteBuf keyBytes = Unpooled.directBuffer(key.remaining()).writeBytes(key);
		send(0, Wire.KEY, h -> h.writeInt(0).writeLong(region.address()).writeLong(region.length()), keyBytes);
	}

	/** Asks decode to read {@code header}'s bytes from {@code source} in the region it announced as {@code index}. */
	void requestRead(DataHeader header, long source, int index) throws Exception {
		send(++seq, Wire.GET, h -> {
			RecordCodec.write(h, header);
			h.writeLong(source).writeLong(header.chunkLen()).writeInt(index);
		}, null);
	}

	private interface Fields {
		void write(ByteBuf header);
	}

	private void send(long number, int type, Fields fields, ByteBuf data) throws Exception {
		ByteBuf header = Unpooled.directBuffer(Wire.MAX_HEADER);
		header.writeLong(decodeId).writeLong(number).writeByte(type);
		fields.write(header);
		try {
			UcpRequest r = endpoint.sendAmNonBlocking(Wire.AM_ID, header.memoryAddress(), header.readableBytes(),
					data == null ? 0 : data.memoryAddress(), data == null ? 0 : data.readableBytes(),
					UcpConstants.UCP_AM_SEND_FLAG_EAGER, null);
			progress(r::isCompleted);
		}
		finally {
			header.release();
			if (data != null) {
				data.release();
			}
		}
	}

	/** Progresses the worker until {@code done}, at most the timeout. */
	void progress(BooleanSupplier done) throws Exception {
		long deadline = System.nanoTime() + TIMEOUT.toNanos();
		while (!done.getAsBoolean()) {
			if (System.nanoTime() > deadline) {
				throw new AssertionError("the rogue prefill's UCX progress timed out");
			}
			worker.progress();
		}
	}

	private static String bootId() throws IOException {
		return Files.readString(Path.of("/proc/sys/kernel/random/boot_id")).trim();
	}

	@Override
	public void close() throws Exception {
		server.close();
		if (endpoint != null) {
			UcpRequest closing = endpoint.closeNonBlockingFlush();
			progress(closing::isCompleted);
		}
		memory.deregister();
		worker.close();
		context.close();
	}
}
