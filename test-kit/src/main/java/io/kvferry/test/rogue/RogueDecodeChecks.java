package io.kvferry.test.rogue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import io.kvferry.FailureCause;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVTransferException;
import io.kvferry.PrefillKVManager;
import io.kvferry.RoomRequest;
import io.kvferry.spi.KVMessage;
import reactor.core.publisher.Mono;

/**
 * The invariants of a {@link RogueDecodeWorld}: what must hold after every step, how prefill and the good decode
 * must have ended when the run ends, and how each room ended.
 */
final class RogueDecodeChecks {

	private final RogueDecodeWorld world;

	RogueDecodeChecks(RogueDecodeWorld world) {
		this.world = world;
	}

	/** Checks what must hold at any moment; throws naming every violation and the steps that led there. */
	void check() {
		for (String v : world.rogue.violations()) {
			if (!world.violations.contains(v)) {
				world.violations.add(v);
			}
		}
		for (RogueDecodeRoom r : world.rooms.values()) {
			if (r.good || r.verified || r.honestly == null || r.sender == null || !world.rogue.succeeded(r.id)
					|| !fencedAll(r)) {
				continue;
			}
			r.verified = true;
			String wrong = world.rogueMem.verify(r.id, r.pages, r.aux, new int[0]);
			if (wrong != null) {
				world.violations.add(r + ", asked by the rogue, was reported Success but its pages do not hold the source's "
						+ "bytes: " + wrong);
			}
		}
		int live = live(world.prefill);
		int claimed = 0;
		for (RogueDecodeRoom r : world.rooms.values()) {
			KVPoll st = r.senderState;
			if (r.sender != null && (st == null || !st.isTerminal())) {
				claimed++;
			}
		}
		// Rooms asked by the good decode are held too until claimed: each of its rooms counts once.
		int bound = RogueDecodeWorld.UNCLAIMED + claimed + world.goodRooms.size();
		if (live > bound) {
			world.violations.add("prefill holds " + live + " live rooms, more than its " + RogueDecodeWorld.UNCLAIMED + " unclaimed, the "
					+ claimed + " its engine claimed and the good decode's " + world.goodRooms.size());
		}
		if (world.virtual()) {
			long timeout = world.setup.stateTimeout().toNanos();
			for (RogueDecodeRoom r : world.rooms.values()) {
				KVPoll st = r.senderState;
				if (r.sender != null && st != null && !st.isTerminal() && world.now() - r.since > timeout) {
					world.violations.add(r + " stayed in " + st + " on prefill for " + Duration.ofNanos(world.now() - r.since)
							.toMillis() + " ms, past its timeout");
				}
			}
		}
		int connections = world.good.stats().connections();
		if (world.goodConnections < 0 && connections > 0) {
			world.goodConnections = connections;
		}
		if (!world.violations.isEmpty()) {
			throw new AssertionError(String.join("\n", world.violations) + "\nsteps:\n  " + String.join("\n  ", world.steps));
		}
	}

	/** @return whether every stripe the rogue's Success names fenced the room (so that all its bytes landed) */
	private boolean fencedAll(RogueDecodeRoom r) {
		// Asked only of rooms with an honest session.
		RogueDecodePeer.Session honestly = Objects.requireNonNull(r.honestly, "honestly");
		KVMessage.Status st = world.rogue.report(honestly, r.id);
		return st != null && world.rogue.fenced(honestly, r.id, st.fences());
	}

	private static int live(PrefillKVManager m) {
		int n = 0;
		for (int c : m.stats().liveRooms().values()) {
			n += c;
		}
		return n;
	}

	/**
	 * Ends the run: every request prefill published is served, time passes past every timeout, and then prefill must
	 * hold no room, the good decode's rooms must have succeeded, and a fresh good room must still succeed.
	 */
	void end() {
		world.step("end");
		RoomRequest q;
		while ((q = world.pickRequest(0)) != null && world.freeSrc.size() >= q.pageCount()) {
			world.serve(0);
		}
		world.settle();
		Duration past = world.setup.stateTimeout().plus(world.setup.leasePeriod()).multipliedBy(2);
		if (world.vts != null) {
			world.vts.advanceTimeBy(past);
		}
		List<Mono<Void>> done = new ArrayList<>();
		for (RogueDecodeRoom r : world.goodRooms) {
			done.add(r.done);
		}
		try {
			Mono.when(done).block(RogueDecodeWorld.T);
		}
		catch (RuntimeException e) {
			world.violations.add("the good decode's rooms did not all end: " + e);
		}
		for (RogueDecodeRoom r : world.goodRooms) {
			if (Objects.requireNonNull(r.receiver, "receiver").poll() != KVPoll.SUCCESS && !r.abortedByEngine && !(r.error instanceof KVTransferException k
					&& k.failureCause() == FailureCause.TIMEOUT && !r.servedLive)) {
				world.violations.add(r + ", of the well-behaved decode rank, ended " + r.receiver.poll() + ": " + r.error);
			}
		}
		if (world.vts != null && live(world.prefill) != 0) {
			world.violations.add("prefill still holds " + world.prefill.stats().liveRooms() + " rooms after every timeout");
		}
		int before = world.goodRooms.size();
		world.openGood(1, true);
		if (world.goodRooms.size() > before) {
			RogueDecodeRoom last = world.goodRooms.get(before);
			RoomRequest fresh = Mono.fromFuture(world.whenPublished(last.id)).timeout(RogueDecodeWorld.T, Mono.empty()).block();
			if (fresh != null) {
				world.serve(fresh);
			}
			world.settle();
			try {
				last.done.block(RogueDecodeWorld.T);
				KVReceiver receiver = Objects.requireNonNull(last.receiver, "receiver");
				if (receiver.poll() != KVPoll.SUCCESS) {
					world.violations.add("a fresh room of the good decode ended " + receiver.poll() + " after the run: "
							+ last.error);
				}
			}
			catch (RuntimeException e) {
				world.violations.add("a fresh room of the good decode did not end after the run: " + e);
			}
		}
		world.check();
	}

	/** @return how the rooms ended, one line per room, for the statistics a property reports */
	List<String> outcomes() {
		List<String> out = new ArrayList<>();
		for (RogueDecodeRoom r : world.rooms.values()) {
			KVPoll st = r.senderState;
			out.add((r.good ? "good decode's room: " : "rogue's room: ") + (r.sender == null ? "never claimed"
					: "prefill " + st) + (r.verified ? " (bytes verified)" : ""));
		}
		return out;
	}
}
