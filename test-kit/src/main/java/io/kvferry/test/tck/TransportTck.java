package io.kvferry.test.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import io.kvferry.HostPort;
import io.kvferry.KVFerryException;
import io.kvferry.KVPoll;
import io.kvferry.MemoryRegion;
import io.kvferry.spi.CloseReason;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.KVTransport;
import io.kvferry.spi.RegionKind;
import io.kvferry.spi.SendGate;
import io.kvferry.spi.SendListener;
import io.kvferry.test.FakeDeviceMemory;
import io.kvferry.test.RecordingHandler;
import io.kvferry.test.Samples;
import io.kvferry.test.Sent;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

/**
 * The contract every {@link KVTransport} keeps, as tests: a transport's test class extends this one (or
 * {@link HandshakeTransportTck} when the transport has a handshake that can refuse a peer) and says how to make, dispose
 * and measure its transports; every test below then runs against it.
 *
 * <p>What the engine relies on: listen and connect do nothing until subscribed; messages and data blocks arrive in the
 * order they were handed over, with their bytes; each side of a connection learns of its close once, with a typed
 * reason; what is sent after a close fails rather than vanishing; a closed {@link SendGate} drops its block and its
 * message; sending much data holds bounded memory. Each test ends by checking that the transport released every
 * landing zone the receiver offered and that the allocator it takes buffers from holds no more live bytes than before
 * the test (Netty's paranoid leak detector and {@code LeakGuard} watch the rest). Those checks, the transports and the
 * helpers the tests share are {@link TransportFixture}'s.
 *
 * <p>Every test makes one server (listening, prefill) transport and one client (connecting, decode) transport, which
 * may be the same object for a transport whose listeners live in memory.
 */
public abstract class TransportTck extends TransportFixture {

	private static final int MIB = 1 << 20;

	@Test
	void listenBindsNothingUntilSubscribedAndThenTheAddressAsked() throws Exception {
		HostPort address = unusedAddress();
		AtomicInteger accepted = new AtomicInteger();
		Mono<KVTransport.Listener> listen = server.listen(address, c -> {
			accepted.incrementAndGet();
			return new RecordingHandler();
		});

		StepVerifier.create(client.connect(address, new RecordingHandler())).expectError().verify(TIMEOUT);

		KVTransport.Listener listener = listen.block(TIMEOUT);
		Objects.requireNonNull(listener, "listener");
		closeAfterTest(listener);
		assertThat(listener.address()).isEqualTo(address);
		KVConnection connection = client.connect(address, new RecordingHandler()).block(TIMEOUT);
		Objects.requireNonNull(connection, "connection");
		assertThat(connection.isActive()).isTrue();
		assertThat(connection.remoteAddress()).isEqualTo(address);
		connection.close("test over");
		awaitCount(accepted, 1);
	}

	@Test
	void listenOnPortZeroReportsTheRealPort() throws Exception {
		Link link = link();
		assertThat(link.listener().address().port()).isPositive();
		assertThat(link.connected().remoteAddress()).isEqualTo(link.listener().address());
	}

	@Test
	void connectDoesNothingUntilSubscribed() throws Exception {
		AtomicInteger accepted = new AtomicInteger();
		RecordingHandler acceptedHandler = new RecordingHandler();
		KVTransport.Listener listener = listen(new HostPort("127.0.0.1", 0), c -> {
			accepted.incrementAndGet();
			return acceptedHandler;
		});
		Mono<KVConnection> later = client.connect(listener.address(), new RecordingHandler());

		// A whole round trip on another connection: a connect that had started would have been accepted by then.
		KVConnection first = client.connect(listener.address(), new RecordingHandler()).block(TIMEOUT);
		Objects.requireNonNull(first, "first");
		first.send(new KVMessage.AbortAck(1));
		assertThat(acceptedHandler.nextMessage(TIMEOUT)).isEqualTo(new KVMessage.AbortAck(1));
		assertThat(accepted).hasValue(1);

		StepVerifier.create(later).assertNext(c -> assertThat(c.isActive()).isTrue()).verifyComplete();
		awaitCount(accepted, 2);
	}

	@Test
	void writeSendsNothingUntilSubscribed() throws Exception {
		Link link = link();
		Mono<Void> write = link.connected().write(new KVMessage.AbortAck(1));
		link.connected().send(new KVMessage.AbortAck(2));
		assertThat(link.acceptedHandler().nextMessage(TIMEOUT)).isEqualTo(new KVMessage.AbortAck(2));

		StepVerifier.create(write).expectComplete().verify(TIMEOUT);
		assertThat(link.acceptedHandler().nextMessage(TIMEOUT)).isEqualTo(new KVMessage.AbortAck(1));
	}

	@Test
	void messagesArriveInTheOrderSentInBothDirections() throws Exception {
		Link link = link();
		int n = 500;
		List<KVMessage> toServer = new ArrayList<>();
		List<KVMessage> toClient = new ArrayList<>();
		for (int i = 0; i < n; i++) {
			toServer.add(i % 2 == 0 ? new KVMessage.AbortAck(i) : new KVMessage.Abort(i, "abort " + i));
			toClient.add(new KVMessage.Status(i, KVPoll.TRANSFERRING, i, ""));
		}
		// Two threads hand messages over at once; each direction keeps its own order.
		Thread other = new Thread(() -> toClient.forEach(link.accepted()::send), "tck-sender");
		other.start();
		toServer.forEach(link.connected()::send);
		other.join(TIMEOUT.toMillis());

		assertThat(link.acceptedHandler().nextMessages(n, TIMEOUT)).containsExactlyElementsOf(toServer);
		assertThat(link.connectedHandler().nextMessages(n, TIMEOUT)).containsExactlyElementsOf(toClient);
	}

	@Test
	void everyMessageTypeArrivesEqual() throws Exception {
		Link link = link();
		List<KVMessage> all = Samples.everyMessage();
		all.forEach(link.connected()::send);
		assertThat(link.acceptedHandler().nextMessages(all.size(), TIMEOUT)).containsExactlyElementsOf(all);
	}

	@Test
	void dataBlocksAndMessagesArriveInTheOrderSentWithTheirBytes() throws Exception {
		Link link = link();
		int blocks = 8;
		int blockLength = MIB / 2;
		MemoryRegion src = registered(Samples.randomRegion(blocks * blockLength, 7));
		MemoryRegion dst = MemoryRegion.allocate(blocks * blockLength, 1);
		AtomicLong received = new AtomicLong();
		AtomicInteger completed = new AtomicInteger();
		MemoryRegion stridedDst = MemoryRegion.allocate(64 * 1024, 1);
		AtomicLong stridedReceived = new AtomicLong();
		link.connectedHandler().sinks = h -> h.room() == 2 ? sink(stridedDst, h, stridedReceived, () -> {
		}) : sink(dst, h, received, completed::incrementAndGet);

		List<Object> sent = new ArrayList<>();
		for (int i = 0; i < blocks; i++) {
			DataHeader header = new DataHeader(1, RegionKind.KV, 0, (long) i * blockLength, blockLength, blockLength, 1);
			link.accepted().send(new DataBlock(header, src.address() + (long) i * blockLength, blockLength));
			KVMessage status = new KVMessage.Status(1, KVPoll.TRANSFERRING, i, "");
			link.accepted().send(status);
			sent.add(header);
			sent.add(status);
		}
		// A strided block: 64 chunks of 256 bytes gathered every 512 bytes, scattered every 1024.
		DataHeader strided = new DataHeader(2, RegionKind.KV, 0, 0, 256, 1024, 64);
		link.accepted().send(new DataBlock(strided, src.address(), 512));
		link.accepted().send(new KVMessage.AbortAck(2));
		sent.add(strided);
		sent.add(new KVMessage.AbortAck(2));

		link.connectedHandler().nextMessages(blocks + 1, TIMEOUT);
		assertThat(List.copyOf(link.connectedHandler().events)).containsExactlyElementsOf(sent);
		assertThat(completed).hasValue(blocks);
		assertThat(received).hasValue((long) blocks * blockLength);
		assertThat(Samples.read(dst, 0, blocks * blockLength)).isEqualTo(Samples.read(src, 0, blocks * blockLength));
		assertThat(stridedReceived).hasValue(64 * 256);
		for (int i = 0; i < 64; i++) {
			assertThat(Samples.read(stridedDst, i * 1024L, 256)).as("chunk %d", i)
					.isEqualTo(Samples.read(src, i * 512L, 256));
		}
	}

	@Test
	void closeIsReportedOnceOnEachSideWithItsKindAndReason() throws Exception {
		Link link = link();
		link.connected().close("decode is done");
		link.connected().close("said twice");

		awaitBothClosed(link);
		assertThat(link.connectedHandler().closeReasons).singleElement().asString().contains("decode is done");
		assertThat(link.connectedHandler().closes).singleElement()
				.satisfies(r -> assertThat(r.kind()).isEqualTo(CloseReason.Kind.LOCAL));
		assertThat(link.acceptedHandler().closes).singleElement()
				.satisfies(r -> assertThat(r.kind()).isEqualTo(CloseReason.Kind.PEER_CLOSED));
	}

	@Test
	void closingBothSidesAtOnceStillReportsOneClosePerSide() throws Exception {
		Link link = link();
		Thread other = new Thread(() -> link.accepted().close("prefill closes"), "tck-closer");
		other.start();
		link.connected().close("decode closes");
		other.join(TIMEOUT.toMillis());

		awaitBothClosed(link);
		assertThat(link.connectedHandler().closes).hasSize(1);
		assertThat(link.acceptedHandler().closes).hasSize(1);
	}

	@Test
	void disposingTheListenerClosesItsConnectionsOnce() throws Exception {
		Link link = link();
		link.listener().dispose();

		awaitBothClosed(link);
		assertThat(link.acceptedHandler().closes).singleElement()
				.satisfies(r -> assertThat(r.kind()).isEqualTo(CloseReason.Kind.DISPOSED));
		assertThat(link.connectedHandler().closes).singleElement()
				.satisfies(r -> assertThat(r.kind()).isEqualTo(CloseReason.Kind.PEER_CLOSED));
	}

	@Test
	void whatIsSentAfterACloseFailsAndNeverArrives() throws Exception {
		Link link = link();
		link.connected().close("closed first");
		link.connectedHandler().awaitClose(TIMEOUT);

		StepVerifier.create(link.connected().write(new KVMessage.AbortAck(1)))
				.expectError(KVFerryException.class)
				.verify(TIMEOUT);
		StepVerifier.create(Sent.now(link.connected(), new KVMessage.AbortAck(2)))
				.expectError(KVFerryException.class)
				.verify(TIMEOUT);
		MemoryRegion src = Samples.randomRegion(4096, 3);
		assertThatCode(() -> link.connected()
				.send(new DataBlock(new DataHeader(1, RegionKind.KV, 0, 0, 4096, 4096, 1), src.address(), 4096)))
				.doesNotThrowAnyException();
		link.acceptedHandler().awaitClose(TIMEOUT);
		assertThat(link.acceptedHandler().events).isEmpty();
	}

	@Test
	void aClosedGateDropsItsBlockAndItsMessage() throws Exception {
		Link link = link();
		MemoryRegion src = registered(Samples.randomRegion(MIB, 5));
		MemoryRegion dst = MemoryRegion.allocate(MIB, 1);
		AtomicLong received = new AtomicLong();
		link.connectedHandler().sinks = h -> sink(dst, h, received, () -> {
		});
		SendGate closed = () -> false;

		link.accepted().send(new DataBlock(new DataHeader(1, RegionKind.KV, 0, 0, MIB, MIB, 1), src.address(),
				MIB, closed));
		Mono<Void> gated = Sent.now(link.accepted(), new KVMessage.Status(1, KVPoll.SUCCESS, 1, ""), closed);
		DataHeader open = new DataHeader(2, RegionKind.KV, 0, 0, 4096, 4096, 1);
		link.accepted().send(new DataBlock(open, src.address(), 4096, SendGate.OPEN));
		link.accepted().send(new KVMessage.AbortAck(2));

		StepVerifier.create(gated).expectError(KVFerryException.class).verify(TIMEOUT);
		assertThat(link.connectedHandler().nextMessage(TIMEOUT)).isEqualTo(new KVMessage.AbortAck(2));
		assertThat(List.copyOf(link.connectedHandler().events)).containsExactly(open, new KVMessage.AbortAck(2));
		assertThat(received).hasValue(4096);
	}

	@Test
	void aSendListenerHearsOnceThatItsMessageWasWritten() throws Exception {
		Link link = link();
		AtomicInteger written = new AtomicInteger();
		AtomicInteger failed = new AtomicInteger();
		link.connected().send(new KVMessage.AbortAck(3), SendGate.OPEN, new SendListener() {
			@Override
			public void written() {
				written.incrementAndGet();
			}

			@Override
			public void failed(Throwable cause) {
				failed.incrementAndGet();
			}
		});
		assertThat(link.acceptedHandler().nextMessage(TIMEOUT)).isEqualTo(new KVMessage.AbortAck(3));
		// The written report precedes or races the delivery; a round trip later it has come.
		roundTrip();
		assertThat(written).hasValue(1);
		assertThat(failed).hasValue(0);
	}

	@Test
	void sendingMuchMoreThanTheBoundHoldsBoundedMemory() throws Exception {
		Link link = link();
		int blocks = 32;
		assertThat(inFlightBound()).as("the bound must be well below what is sent").isLessThan(blocks * (long) MIB / 2);
		MemoryRegion src = registered(Samples.randomRegion(MIB, 11));
		MemoryRegion dst = MemoryRegion.allocate(MIB, 1);
		AtomicLong received = new AtomicLong();
		AtomicLong peak = new AtomicLong();
		// Sampled as each block lands: by then the sender has queued all blocks and Netty holds what it will hold.
		link.connectedHandler().sinks = h -> sink(dst, h, received,
				() -> peak.accumulateAndGet(allocatedBytes() - allocatedBefore(), Math::max));
		for (int i = 0; i < blocks; i++) {
			link.accepted().send(new DataBlock(new DataHeader(1, RegionKind.KV, 0, 0, MIB, MIB, 1), src.address(),
					MIB));
		}
		link.accepted().send(new KVMessage.AbortAck(1));

		// Encrypting 32 MiB on a busy machine takes a while: a longer bound for this one wait.
		assertThat(link.connectedHandler().nextMessage(TIMEOUT.multipliedBy(3))).isEqualTo(new KVMessage.AbortAck(1));
		assertThat(received).hasValue((long) blocks * MIB);
		assertThat(Samples.read(dst, 0, MIB)).isEqualTo(Samples.read(src, 0, MIB));
		assertThat(peak.get()).as("allocator bytes held while %d MiB were in flight", blocks)
				.isLessThanOrEqualTo(inFlightBound());
	}

	@Test
	void aRegionOfMemoryTheTransportCannotReachIsRefusedWhenRegisteredNamingIt() {
		MemoryRegion device = FakeDeviceMemory.allocate(16, 4096);
		MemoryRegion host = Samples.randomRegion(4096, 13);
		if (reachesDeviceMemory()) {
			StepVerifier.create(server.register(List.of(host, device)))
					.assertNext(this::releaseAfterTest)
					.verifyComplete();
			return;
		}
		StepVerifier.create(server.register(List.of(host, device)))
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(KVFerryException.class)
						.hasMessageContaining("cuda:0")
						.hasMessageContaining(Long.toHexString(device.address())))
				.verify(TIMEOUT);
		// Host memory alone is fine.
		StepVerifier.create(server.register(List.of(host)))
				.assertNext(this::releaseAfterTest)
				.verifyComplete();
	}
}
