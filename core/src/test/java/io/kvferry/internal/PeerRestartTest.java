package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;

import io.kvferry.DecodeKVManager;
import io.kvferry.FailureCause;
import io.kvferry.HostPort;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.KVTransferException;
import io.kvferry.ParallelLayout;
import io.kvferry.PrefillKVManager;
import io.kvferry.bootstrap.BootstrapFields;
import io.kvferry.bootstrap.PrefillRegistration;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.test.InMemoryBootstrap;
import io.kvferry.transport.local.InMemoryKVTransport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;

/**
 * A prefill rank that comes back as another process replaces the old one at once: the old one's live rooms fail as
 * restarted, naming both incarnations, while its connection still looks open (a process that vanished without closing
 * its sockets), and the next room goes to the new process. The old process never serves again, whether the registry or
 * its handshake names it later.
 */
class PeerRestartTest {

	private static final Duration T = Duration.ofSeconds(10);
	private static final ModelShape SHAPE = new ModelShape(2, 2, 16, 2, 4, false, 0, 64, 0);
	private static final HostPort BOOTSTRAP = new HostPort("127.0.0.1", 8998);

	private final InMemoryBootstrap registry = new InMemoryBootstrap();
	private final InMemoryKVTransport transport = InMemoryKVTransport.create();
	private PrefillKVManager prefill;
	private PrefillKVManager restarted;
	private PrefillKVManager third;
	private DecodeKVManager decode;
	// The sender of the last room waiting() opened.
	private KVSender waitingSender;

	@BeforeEach
	void start() {
		prefill = startPrefill();
		decode = KVManagerSpec.decode()
				.kvArgs(RankMemory.decode(SHAPE, ParallelLayout.SINGLE, 8, 2, 2).kvArgs()).transport(transport)
				.bootstrapClient(registry).startNow();
	}

	private PrefillKVManager startPrefill() {
		return KVManagerSpec.prefill()
				.kvArgs(RankMemory.prefill(SHAPE, ParallelLayout.SINGLE, 8, 2, 2).kvArgs()).transport(transport)
				.bootstrapClient(registry).bootstrapAddress(BOOTSTRAP).bindAddress(new HostPort("127.0.0.1", 0))
				.startNow();
	}

	@AfterEach
	void stop() {
		decode.disposeNow(T);
		prefill.disposeNow(T);
		if (restarted != null) {
			restarted.disposeNow(T);
		}
		if (third != null) {
			third.disposeNow(T);
		}
	}

	/** A room decode asked for and prefill holds, waiting for its engine: live when the restart is seen. */
	private KVReceiver waiting(PrefillKVManager rank, long room) {
		KVReceiver r = decode.receiver(BOOTSTRAP, room);
		r.sendMetadata(new int[] { 1 }, -1, new int[0]);
		waitingSender = rank.sender(room);
		StepVerifier.create(waitingSender.states()).thenConsumeWhile(s -> s != KVPoll.WAITING_FOR_INPUT)
				.expectNext(KVPoll.WAITING_FOR_INPUT).thenCancel().verify(T);
		return r;
	}

	private static void failsAsRestarted(KVReceiver r, long oldIncarnation, long newIncarnation) {
		StepVerifier.create(r.completion())
				.expectErrorSatisfies(e -> {
					KVTransferException k = (KVTransferException) e;
					assertThat(k.failureCause()).isEqualTo(FailureCause.PEER_RESTARTED);
					assertThat(k.reason()).contains("restarted: incarnation "
							+ BootstrapFields.incarnationText(oldIncarnation) + " was replaced by "
							+ BootstrapFields.incarnationText(newIncarnation));
				})
				.verify(T);
	}

	@Test
	void aRankRegisteredAgainAtItsEndpointWithAnotherIncarnationFailsTheOldOnesRoomsAsRestarted() {
		KVReceiver r = waiting(prefill, 1);
		long next = prefill.incarnation() + 1;
		// The same endpoint, another process: what a registry sees when a rank restarts on the same host and port.
		registry.register(BOOTSTRAP, new PrefillRegistration(PrefillRegistration.PREFILL, ParallelLayout.SINGLE,
				prefill.endpoint().host(), prefill.endpoint().port(), SHAPE.pageSize(), false, false, next)).block(T);
		failsAsRestarted(r, prefill.incarnation(), next);
		assertThat(decode.stats().failures()).containsEntry(FailureCause.PEER_RESTARTED, 1L);
	}

	@Test
	void theFirstRoomAfterARestartGoesToTheNewProcess() {
		KVReceiver old = waiting(prefill, 1);
		// The old process never closes its connection; the new one registers and replaces it.
		restarted = startPrefill();
		failsAsRestarted(old, prefill.incarnation(), restarted.incarnation());
		KVReceiver r = decode.receiver(BOOTSTRAP, 2);
		r.sendMetadata(new int[] { 2 }, -1, new int[0]);
		KVSender s = restarted.sender(2);
		s.init(1, -1);
		s.send(new int[] { 2 }, new int[0]);
		StepVerifier.create(r.completion()).expectComplete().verify(T);
		StepVerifier.create(s.completion()).expectComplete().verify(T);
	}

	/** Registers {@code rank}'s endpoint again with its incarnation, as its process does when it resumes. */
	private void registersAgain(PrefillKVManager rank) {
		registry.register(BOOTSTRAP, PrefillRegistration.prefill(ParallelLayout.SINGLE, rank.endpoint().host(),
				rank.endpoint().port(), SHAPE.pageSize()).withIncarnation(rank.incarnation())).block(T);
	}

	/** A room that succeeds on {@code rank}. */
	private void servedBy(PrefillKVManager rank, long room) {
		KVReceiver r = decode.receiver(BOOTSTRAP, room);
		r.sendMetadata(new int[] { (int) room % 8 }, -1, new int[0]);
		KVSender s = rank.sender(room);
		s.init(1, -1);
		s.send(new int[] { (int) room % 8 }, new int[0]);
		StepVerifier.create(r.completion()).expectComplete().verify(T);
		StepVerifier.create(s.completion()).expectComplete().verify(T);
	}

	private static void refusedAsRetired(KVReceiver r, long retired, long current) {
		StepVerifier.create(r.completion())
				.expectErrorSatisfies(e -> {
					KVTransferException k = (KVTransferException) e;
					assertThat(k.failureCause()).isEqualTo(FailureCause.PEER_RESTARTED);
					assertThat(k.reason()).contains("showed incarnation " + BootstrapFields.incarnationText(retired))
							.contains("was replaced by " + BootstrapFields.incarnationText(current))
							.contains("never taken back");
				})
				.verify(T);
	}

	/** The old process is replaced by a new one at another endpoint, which then serves a room. */
	private void replaced() {
		KVReceiver old = waiting(prefill, 1);
		restarted = startPrefill();
		failsAsRestarted(old, prefill.incarnation(), restarted.incarnation());
		servedBy(restarted, 2);
	}

	@Test
	void aReplacedProcessThatRegistersAgainIsNeverAskedForARoom() {
		replaced();
		// The new process goes away; the old one, resumed, registers again: the registry answers it.
		restarted.disposeNow(T);
		registersAgain(prefill);
		KVReceiver r = decode.receiver(BOOTSTRAP, 3);
		r.sendMetadata(new int[] { 3 }, -1, new int[0]);
		refusedAsRetired(r, prefill.incarnation(), restarted.incarnation());
		// Refused, not remembered: the next room looks the rank up again and reaches the process that replaced it.
		third = startPrefill();
		servedBy(third, 4);
	}

	@Test
	void aReplacedProcessBehindARegistrationWithoutIncarnationIsRefusedAtItsHandshake() {
		replaced();
		restarted.disposeNow(T);
		// A registry that keeps no incarnation (SGLang's) names the old process's endpoint: its handshake tells.
		registry.register(BOOTSTRAP, PrefillRegistration.prefill(ParallelLayout.SINGLE, prefill.endpoint().host(),
				prefill.endpoint().port(), SHAPE.pageSize())).block(T);
		KVReceiver r = decode.receiver(BOOTSTRAP, 3);
		r.sendMetadata(new int[] { 3 }, -1, new int[0]);
		refusedAsRetired(r, prefill.incarnation(), restarted.incarnation());
	}

	@Test
	void aReplacedProcessRegisteringAgainLeavesTheCurrentOneServing() {
		replaced();
		// The registry now names the old process: decode keeps its connection and route to the current one.
		registersAgain(prefill);
		servedBy(restarted, 3);
	}

	@Test
	void aRegistrationWithoutAnIncarnationIsNoRestart() {
		KVReceiver r = waiting(prefill, 1);
		// SGLang's own ranks send none: an unknown incarnation never makes a live rank look restarted.
		registry.register(BOOTSTRAP, PrefillRegistration.prefill(ParallelLayout.SINGLE, prefill.endpoint().host(),
				prefill.endpoint().port(), SHAPE.pageSize())).block(T);
		KVSender s = waitingSender;
		s.init(1, -1);
		s.send(new int[] { 1 }, new int[0]);
		StepVerifier.create(r.completion()).expectComplete().verify(T);
	}
}
