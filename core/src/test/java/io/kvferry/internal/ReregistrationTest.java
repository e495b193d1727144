package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import io.kvferry.DecodeKVManager;
import io.kvferry.FailureCause;
import io.kvferry.HostPort;
import io.kvferry.KVArgs;
import io.kvferry.KVFerryException;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.KVTransferException;
import io.kvferry.MemoryKind;
import io.kvferry.MemoryRegion;
import io.kvferry.ParallelLayout;
import io.kvferry.PrefillKVManager;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.PeerLayout;
import io.kvferry.test.InMemoryBootstrap;
import io.kvferry.test.RecordingHandler;
import io.kvferry.transport.local.InMemoryKVTransport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

/**
 * A decode manager re-registers its regions on the in-memory transport: what it accepts, what it refuses and why, and
 * how a prefill rank takes a new layout (and refuses one it must not plan with).
 */
class ReregistrationTest {

	private static final Duration T = Duration.ofSeconds(10);
	private static final ModelShape SHAPE = new ModelShape(2, 2, 16, 2, 4, false, 0, 64, 0);
	private static final HostPort BOOTSTRAP = new HostPort("127.0.0.1", 8998);
	private static final int[] NONE = new int[0];

	private final InMemoryBootstrap bootstrap = new InMemoryBootstrap();
	private final InMemoryKVTransport transport = InMemoryKVTransport.create();
	private final RankMemory prefillMemory = RankMemory.prefill(SHAPE, ParallelLayout.SINGLE, 8, 2, 2);
	private final RankMemory decodeMemory = RankMemory.decode(SHAPE, ParallelLayout.SINGLE, 8, 2, 2);
	private final PrefillKVManager prefill = KVManagerSpec.prefill().kvArgs(prefillMemory.kvArgs()).transport(transport)
			.bootstrapClient(bootstrap).bootstrapAddress(BOOTSTRAP).bindAddress(new HostPort("127.0.0.1", 0))
			.startNow(T);
	private final DecodeKVManager decode = KVManagerSpec.decode().kvArgs(decodeMemory.kvArgs()).transport(transport)
			.bootstrapClient(bootstrap).startNow(T);

	@AfterEach
	void close() {
		prefill.disposeNow(T);
		decode.disposeNow(T);
	}

	/** Moves room {@code room} from prefill pages 0 and 1 into decode pages {@code dst} of {@code into}. */
	private void moves(long room, int[] dst, RankMemory into) {
		prefillMemory.fill(room, new int[] { 0, 1 }, 0, NONE);
		KVSender sender = prefill.sender(room);
		sender.init(2, 0);
		KVReceiver receiver = decode.receiver(BOOTSTRAP, room);
		receiver.sendMetadata(dst, 1, NONE);
		sender.send(new int[] { 0, 1 }, NONE);
		StepVerifier.create(Mono.when(sender.completion(), receiver.completion())).expectComplete().verify(T);
		assertThat(into.verify(room, dst, 1, NONE)).isNull();
	}

	@Test
	void theInMemoryTransportMovesRoomsIntoTheNewRegionsAfterALazyReregistration() {
		moves(1, new int[] { 3, 4 }, decodeMemory);
		RankMemory grown = RankMemory.decode(SHAPE, ParallelLayout.SINGLE, 16, 2, 2);

		Mono<Integer> reregister = decode.reregister(grown.kvArgs(), T);
		assertThat(decode.kvArgs()).as("lazy: nothing before subscription").isSameAs(decodeMemory.kvArgs());
		StepVerifier.create(reregister).expectNext(1).expectComplete().verify(T);
		assertThat(decode.kvArgs()).isSameAs(grown.kvArgs());

		long old = decodeMemory.checksumOutside(NONE, -1, NONE);
		// Page 12 exists only in the new pool: prefill admits it only with the new page counts.
		moves(3, new int[] { 12, 5 }, grown);
		assertThat(decodeMemory.checksumOutside(NONE, -1, NONE)).isEqualTo(old);
	}

	@Test
	void argsThatChangeMoreThanTheRegionsAreRefusedNamingBothLayouts() {
		RankMemory otherShape = RankMemory.decode(new ModelShape(2, 2, 16, 2, 8, false, 0, 64, 0),
				ParallelLayout.SINGLE, 8, 2, 2);
		assertThatThrownBy(() -> decode.reregister(otherShape.kvArgs(), T))
				.isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("the new regions change the rank's layout from {engineRank=0 pageSize=4")
				.hasMessageContaining("to {engineRank=0 pageSize=8")
				.hasMessageContaining("(expected: only the regions' addresses, item lengths and item counts change");
		assertThatThrownBy(() -> decode.reregister(decodeMemory.kvArgs(), Duration.ofMillis(-1)))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("deadline : PT-0.001S");
		assertThatThrownBy(() -> decode.reregister(null, T)).isInstanceOf(NullPointerException.class);
	}

	@Test
	void oneReregistrationAtATimeAndNoneOnAClosedManager() {
		decode.receiver(BOOTSTRAP, 1);
		RankMemory next = RankMemory.decode(SHAPE, ParallelLayout.SINGLE, 8, 2, 2);
		// The first waits for room 1, which never gets its pages: the second is refused meanwhile.
		Disposable first = decode.reregister(next.kvArgs(), T).subscribe();
		StepVerifier.create(decode.reregister(next.kvArgs(), T))
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(IllegalStateException.class)
						.hasMessageContaining("is already re-registering its regions"))
				.verify(T);
		// Cancelled, the first leaves the old regions in use and admits rooms again.
		first.dispose();
		assertThat(decode.kvArgs()).isSameAs(decodeMemory.kvArgs());
		assertThat(decode.receiver(BOOTSTRAP, 2).poll()).isNotEqualTo(KVPoll.FAILED);

		decode.disposeNow(T);
		StepVerifier.create(decode.reregister(next.kvArgs(), T))
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(IllegalStateException.class)
						.hasMessageContaining("is closed"))
				.verify(T);
	}

	@Test
	void regionsTheTransportCannotRegisterLeaveTheOldOnesInUse() {
		KVArgs old = decodeMemory.kvArgs();
		List<MemoryRegion> kv = new ArrayList<>(old.kvRegions());
		MemoryRegion first = kv.get(0);
		kv.set(0, MemoryRegion.of(0x1000, first.length(), first.itemLen(), MemoryKind.cuda(0)));
		KVArgs onDevice = old.mutate().kvRegions(kv).build();

		StepVerifier.create(decode.reregister(onDevice, T))
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(KVFerryException.class)
						.hasMessageContaining("moves host memory only"))
				.verify(T);
		assertThat(decode.kvArgs()).isSameAs(old);
		moves(1, new int[] { 3, 4 }, decodeMemory);
	}

	@Test
	void aRoomOpenedWhileTheRegionsAreSwappedIsBornFailedNamingTheReregistration() {
		KVReceiver inFlight = decode.receiver(BOOTSTRAP, 1);
		RankMemory next = RankMemory.decode(SHAPE, ParallelLayout.SINGLE, 8, 2, 2);
		StepVerifier.create(decode.reregister(next.kvArgs(), T))
				.expectSubscription()
				.then(() -> {
					assertThat(decode.kvArgs()).as("swapped while room 1 could still land").isSameAs(
							decodeMemory.kvArgs());
					KVReceiver refused = decode.receiver(BOOTSTRAP, 2);
					assertThat(refused.poll()).isEqualTo(KVPoll.FAILED);
					StepVerifier.create(refused.completion())
							.expectErrorSatisfies(e -> {
								KVTransferException k = (KVTransferException) e;
								assertThat(k.failureCause()).isEqualTo(FailureCause.DRAINING);
								assertThat(k.reason()).isEqualTo("KV manager " + decode
										+ " is re-registering its regions and admits no new rooms");
							})
							.verify(T);
					inFlight.abort("the engine gave the room up");
				})
				.expectNext(1)
				.expectComplete()
				.verify(T);
		moves(3, new int[] { 3, 4 }, next);
	}

	/** A decode rank as prefill sees it: stripe 0 after the handshake. */
	private RecordingHandler handshaken() throws InterruptedException {
		RecordingHandler h = new RecordingHandler();
		h.connection = transport.connect(prefill.endpoint(), h).block(T);
		h.connection.send(new KVMessage.Hello(KVMessage.PROTOCOL_VERSION, layout(decodeMemory), false, 1));
		assertThat(h.nextMessage(T)).isInstanceOf(KVMessage.HelloAck.class);
		return h;
	}

	private static PeerLayout layout(RankMemory memory) {
		return PeerLayout.of(memory.kvArgs(), ParallelLayout.SINGLE);
	}

	@Test
	void prefillTakesEachGenerationOnceAndInOrder() throws InterruptedException {
		RecordingHandler h = handshaken();
		RankMemory next = RankMemory.decode(SHAPE, ParallelLayout.SINGLE, 16, 2, 2);
		h.connection.send(new KVMessage.Layout(2, layout(next)));
		h.connection.send(new KVMessage.Layout(2, layout(next)));
		assertThat(h.awaitClose(T)).contains("sent layout generation 2 after 2 (expected: a larger one)");

		assertThatThrownBy(() -> new KVMessage.Layout(0, layout(next)))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("generation : 0 (expected: 1..");
	}

	@Test
	void prefillRefusesALayoutItCannotPlanWithAndClosesNamingIt() throws InterruptedException {
		RecordingHandler h = handshaken();
		RankMemory otherModel = RankMemory.decode(new ModelShape(3, 2, 16, 2, 4, false, 0, 64, 0),
				ParallelLayout.SINGLE, 8, 2, 2);
		h.connection.send(new KVMessage.Layout(1, layout(otherModel)));
		assertThat(h.awaitClose(T)).contains("re-registered regions of another model");

		RecordingHandler before = new RecordingHandler();
		before.connection = transport.connect(prefill.endpoint(), before).block(T);
		before.connection.send(new KVMessage.Layout(1, layout(decodeMemory)));
		assertThat(before.awaitClose(T)).contains("decode sent Layout before the handshake");
	}

	@Test
	void prefillPlansTheRequestsAfterALayoutWithItsPageCounts() throws InterruptedException {
		RecordingHandler h = handshaken();
		// Page 12 is past the handshake's 8 pages: refused before the layout, admitted after it.
		h.connection.send(new KVMessage.TransferRequest(5, new int[] { 12 }, -1, NONE, 1, false));
		KVMessage refused = h.nextMessage(T);
		assertThat(refused).isInstanceOf(KVMessage.Status.class);
		assertThat(((KVMessage.Status) refused).status()).isEqualTo(KVPoll.FAILED);
		assertThat(((KVMessage.Status) refused).reason()).contains("asked room 5 for");

		h.connection.send(new KVMessage.Layout(1, layout(RankMemory.decode(SHAPE, ParallelLayout.SINGLE, 16, 2, 2))));
		h.connection.send(new KVMessage.TransferRequest(6, new int[] { 12 }, -1, NONE, 1, false));
		KVSender sender = prefill.sender(6);
		sender.init(1, -1);
		StepVerifier.create(sender.states().filter(s -> s == KVPoll.WAITING_FOR_INPUT).take(1))
				.expectNext(KVPoll.WAITING_FOR_INPUT).expectComplete().verify(T);
	}
}
