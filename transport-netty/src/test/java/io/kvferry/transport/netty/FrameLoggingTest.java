package io.kvferry.transport.netty;

import static io.kvferry.transport.netty.Loopback.TIMEOUT;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.atomic.AtomicLong;

import ch.qos.logback.classic.Level;
import io.kvferry.KVPoll;
import io.kvferry.MemoryRegion;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.RegionKind;
import io.kvferry.test.RegionSink;
import io.kvferry.test.Samples;
import org.junit.jupiter.api.Test;

/**
 * Frame logging over a real loopback connection, as an operator turns it on: with the documented category at DEBUG
 * each side logs the handshake, control and data frames it writes and reads under its connection's id, with the stripe
 * a {@code JOIN} named, also across a payload read straight into registered memory, and never a session token; below
 * DEBUG a connection has no frame logger at all.
 */
class FrameLoggingTest {

	/** The category docs/configuration.md tells operators to turn on. */
	private static final String CATEGORY = "io.kvferry.frames";
	/** The frame logger's name in a channel's pipeline. */
	private static final String HANDLER = "kvferry.frames";

	private static final int MIB = 1 << 20;

	@Test
	void eachSideLogsTheFramesItWritesAndReadsUnderItsConnectionId() throws Exception {
		long token = 0x5eC2_e7A1_0B5E_55EDL;
		try (LogRecorder log = LogRecorder.at(CATEGORY, Level.DEBUG);
				Loopback link = Loopback.open(NettyKVTransport.create())) {
			String decode = "DEBUG [" + link.connected.id() + "] ";
			String prefill = "DEBUG [" + link.accepted.id() + "] ";
			MemoryRegion source = Samples.randomRegion(MIB, 9);
			MemoryRegion target = MemoryRegion.allocate(MIB, 1);
			AtomicLong received = new AtomicLong();
			AtomicLong landed = new AtomicLong();
			link.connectedHandler.sinks = h -> new RegionSink(target, h, received, landed, () -> { });

			link.connected.send(new KVMessage.Join(token, 3));
			assertThat(link.acceptedHandler.nextMessage(TIMEOUT)).isEqualTo(new KVMessage.Join(token, 3));
			link.accepted.send(new KVMessage.Joined(3));
			link.connected.send(new KVMessage.AbortAck(5));
			assertThat(link.acceptedHandler.nextMessage(TIMEOUT)).isEqualTo(new KVMessage.AbortAck(5));
			link.accepted.send(new DataBlock(new DataHeader(5, RegionKind.KV, 1, 0, MIB, MIB, 1),
					source.address(), MIB));
			link.accepted.send(new KVMessage.Status(5, KVPoll.SUCCESS, 0, ""));
			assertThat(link.connectedHandler.nextMessages(2, TIMEOUT)).containsExactly(new KVMessage.Joined(3),
					new KVMessage.Status(5, KVPoll.SUCCESS, 0, ""));
			assertThat(Samples.read(target, 0, MIB)).isEqualTo(Samples.read(source, 0, MIB));
			// The payload went past the frame logger in buffers over registered memory, not pooled copies.
			assertThat(landed.get()).isPositive();

			assertThat(link.connected.channel().pipeline().get(HANDLER)).isNotNull();
			for (String side : new String[] { decode, prefill }) {
				log.await(line -> line.startsWith(side + "open L:"), TIMEOUT);
				log.await((side + "OUT PREFACE version=" + KVMessage.PROTOCOL_VERSION)::equals, TIMEOUT);
				log.await((side + "IN PREFACE version=" + KVMessage.PROTOCOL_VERSION)::equals, TIMEOUT);
				log.await(line -> line.startsWith(side + "OUT AUTH length="), TIMEOUT);
				log.await(line -> line.startsWith(side + "IN AUTH length="), TIMEOUT);
			}
			log.await((decode + "OUT JOIN stripe=3 length=13")::equals, TIMEOUT);
			log.await((prefill + "IN JOIN stripe=3 length=13")::equals, TIMEOUT);
			log.await((prefill + "OUT JOINED stripe=3 length=5")::equals, TIMEOUT);
			log.await((decode + "IN JOINED stripe=3 length=5")::equals, TIMEOUT);
			log.await((decode + "OUT ABORT_ACK stripe=3 room=5 length=9")::equals, TIMEOUT);
			log.await((prefill + "IN ABORT_ACK stripe=3 room=5 length=9")::equals, TIMEOUT);
			String data = "DATA stripe=3 room=5 kind=KV region=1 offset=0 chunk=" + MIB + "x1 payload=" + MIB
					+ " length=" + (1 + 37 + MIB);
			log.await((prefill + "OUT " + data)::equals, TIMEOUT);
			log.await((decode + "IN " + data)::equals, TIMEOUT);
			// Described after a megabyte the scanner skipped by count: it kept its place in the stream.
			log.await(line -> line.startsWith(decode + "IN STATUS stripe=3 room=5 length="), TIMEOUT);
			assertThat(log.lines()).noneMatch(line -> line.contains(Long.toString(token))
					|| line.toLowerCase().contains(Long.toHexString(token)));
		}
	}

	@Test
	void belowDebugAConnectionHasNoFrameLoggerAndNothingIsLogged() throws Exception {
		try (LogRecorder log = LogRecorder.at(CATEGORY, Level.INFO);
				Loopback link = Loopback.open(NettyKVTransport.create())) {
			link.connected.send(new KVMessage.AbortAck(6));
			assertThat(link.acceptedHandler.nextMessage(TIMEOUT)).isEqualTo(new KVMessage.AbortAck(6));

			assertThat(link.connected.channel().pipeline().get(HANDLER)).isNull();
			assertThat(link.accepted.channel().pipeline().get(HANDLER)).isNull();
			assertThat(log.lines()).isEmpty();
		}
	}
}
