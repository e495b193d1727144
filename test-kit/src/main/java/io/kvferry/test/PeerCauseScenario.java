package io.kvferry.test;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

import io.kvferry.DecodeKVManager;
import io.kvferry.FailureCause;
import io.kvferry.HostPort;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVOverloadException;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVTransferException;
import io.kvferry.ParallelLayout;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.spi.FailureCodes;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.KVTransport;
import reactor.test.StepVerifier;

/**
 * Decode learns why a prefill rank failed a room from the failure code of its Failed status, over any transport: a
 * prefill peer answers each room's request with a status of one code, and decode's receiver fails with that cause
 * (overload as a {@link KVOverloadException} with the status's retry hint), whatever the reason's words say. A code
 * without a category, or one this release does not know, fails the room as the peer's failure.
 */
public final class PeerCauseScenario implements AutoCloseable {

	private static final Duration T = Duration.ofSeconds(10);
	private static final ModelShape SHAPE = new ModelShape(1, 2, 16, 2, 4, false, 0, 0, 0);
	private static final HostPort BOOTSTRAP = new HostPort("10.0.0.7", 1);

	private final Map<Long, KVMessage.Status> answers = new ConcurrentHashMap<>();
	private final RoguePrefill peer;
	private final DecodeKVManager decode;

	/** @param transports makes the two ends' transports (the peer's first, then decode's) */
	public PeerCauseScenario(Supplier<KVTransport> transports) {
		RankMemory prefillMem = RankMemory.prefill(SHAPE, ParallelLayout.SINGLE, 4, 0, 0);
		RankMemory decodeMem = RankMemory.decode(SHAPE, ParallelLayout.SINGLE, 4, 0, 0);
		InMemoryBootstrap bootstrap = new InMemoryBootstrap();
		this.peer = RoguePrefill.start(transports.get(), bootstrap, BOOTSTRAP, prefillMem.kvArgs(),
				(c, req) -> c.send(Objects.requireNonNull(answers.remove(req.room()), "answer of the room asked")));
		this.decode = KVManagerSpec.decode().kvArgs(decodeMem.kvArgs()).transport(transports.get())
				.bootstrapClient(bootstrap).stripes(1).startNow();
	}

	/** Every cause, each code without a category and a later release's code arrive as the cause decode reports. */
	public void everyCodeArrivesAsItsCause() {
		long room = 1;
		for (FailureCause cause : FailureCause.values()) {
			int hint = cause == FailureCause.OVERLOAD ? 250 : 0;
			KVTransferException e = fail(room++, FailureCodes.code(cause), "the rank's own words", hint);
			assertThat(e.failureCause()).as("code of %s", cause)
					.isEqualTo(cause == FailureCause.OTHER ? FailureCause.PEER_FAILED : cause);
			assertThat(e.isFromAnotherRank()).isTrue();
			assertThat(e.reason()).endsWith("the rank's own words");
			if (cause == FailureCause.OVERLOAD) {
				assertThat(e).isInstanceOf(KVOverloadException.class);
				assertThat(((KVOverloadException) e).retryAfter()).isEqualTo(Duration.ofMillis(250));
			}
		}
		for (int code : new int[] { FailureCodes.NONE, 200, FailureCodes.MAX }) {
			assertThat(fail(room++, code, "a later release's cause", 0).failureCause()).as("code %d", code)
					.isEqualTo(FailureCause.PEER_FAILED);
		}
	}

	/** The words of a reason are never read for a cause: only the code says overload, and only it carries the hint. */
	public void theReasonsWordsAreNotRead() {
		KVTransferException words = fail(100, FailureCodes.code(FailureCause.PEER_FAILED),
				"overloaded: retry-after-ms=9; room 100 refused", 0);
		assertThat(words.failureCause()).isEqualTo(FailureCause.PEER_FAILED);
		assertThat(words).isNotInstanceOf(KVOverloadException.class);
		KVTransferException code = fail(101, FailureCodes.code(FailureCause.OVERLOAD), "the engine is full", 4000);
		assertThat(code).isInstanceOf(KVOverloadException.class);
		assertThat(((KVOverloadException) code).retryAfter()).isEqualTo(Duration.ofSeconds(4));
		KVTransferException lease = fail(102, FailureCodes.code(FailureCause.LEASE_EXPIRED), "no renewal", 0);
		assertThat(lease.failureCause()).isEqualTo(FailureCause.LEASE_EXPIRED);
		KVTransferException requeue = fail(103, FailureCodes.code(FailureCause.REQUEUE), "queue it again", 0);
		assertThat(requeue.failureCause()).isEqualTo(FailureCause.REQUEUE);
	}

	private KVTransferException fail(long room, int code, String reason, int retryAfterMillis) {
		answers.put(room, new KVMessage.Status(room, KVPoll.FAILED, 0, reason, 0, KVMessage.NO_CHECKSUM, 0,
				code, retryAfterMillis));
		KVReceiver r = decode.receiver(BOOTSTRAP, room);
		r.sendMetadata(new int[] { (int) (room % 4) }, -1, new int[0]);
		KVTransferException[] failure = new KVTransferException[1];
		StepVerifier.create(r.completion())
				.expectErrorSatisfies(e -> failure[0] = (KVTransferException) e)
				.verify(T);
		return failure[0];
	}

	@Override
	public void close() {
		decode.disposeNow(T);
		peer.close();
	}
}
