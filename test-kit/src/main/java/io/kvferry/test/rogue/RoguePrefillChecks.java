package io.kvferry.test.rogue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import io.kvferry.FailureCause;
import io.kvferry.KVPoll;
import io.kvferry.KVTransferException;
import io.kvferry.LandedPages;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;

/**
 * The invariants of a {@link RoguePrefillWorld}: what each room's states, layers and completion must show as they
 * come, what must hold after every step, and how every room must have ended when the run ends.
 */
final class RoguePrefillChecks {

	private final RoguePrefillWorld world;

	RoguePrefillChecks(RoguePrefillWorld world) {
		this.world = world;
	}

	/**
	 * Follows the room's states, layers and completion, checking each as it comes (on the callback scheduler). The
	 * room's pages are reused only once all three ended, so that no check reads pages already given to another room.
	 */
	void watch(RoomModel m) {
		Mono<Void> states = m.receiver.states().doOnNext(s -> {
			m.state = s;
			m.since = world.now();
			if (s == KVPoll.SUCCESS) {
				String wrong = world.decodeMem.verify(m.id, m.pages, m.aux, new int[0]);
				if (wrong != null) {
					world.violations.add(m + " reached Success with bytes that are not the source's: " + wrong);
				}
				m.verified = true;
				if (m.mustFail != null) {
					world.violations.add(m + " reached Success although " + m.mustFail);
				}
			}
		}).then();
		Mono<Void> layers = m.receiver.layers().doOnNext(layer -> {
			String wrong = world.decodeMem.verifyLayer(m.id, m.pages, 0, layer);
			if (wrong != null) {
				world.violations.add(m + " emitted layer " + layer + " with bytes that are not the source's: " + wrong);
			}
		}).then();
		Mono<Void> completion = m.receiver.completion().doOnSuccess(v -> m.released = true).doOnError(e -> {
			m.error = e;
			m.released = true;
			if (e instanceof KVTransferException k) {
				checkLanded(m, k.landedPages());
			}
			if (!m.rogue && !m.aborted && !timedOut(m, e)) {
				world.violations.add(m + ", asked of the well-behaved prefill rank, failed: " + e);
			}
		}).onErrorResume(e -> Mono.empty());
		m.done = Mono.when(states, layers, completion).doFinally(signal -> m.settled = true).cache();
		m.done.subscribe();
	}

	/**
	 * A failed room says which pages landed whole in which layer: each of them must hold the source's bytes there, as
	 * the engine may reuse them as they are.
	 */
	private void checkLanded(RoomModel m, LandedPages landed) {
		if (!landed.isKnown()) {
			return;
		}
		for (int layer = 0; layer < landed.layers(); layer++) {
			for (int page : landed.landed(layer)) {
				int position = RoguePrefillWorld.indexOf(m.pages, page);
				String wrong = position < 0 ? "page " + page + " is not the room's"
						: world.decodeMem.verifyLayer(m.id, new int[] { page }, position, layer);
				if (wrong != null) {
					world.violations.add(m + " failed reporting page " + page + " of layer " + layer + " landed whole, but "
							+ "it is not the source's: " + wrong);
				}
			}
		}
	}

	/** @return whether a good room failed by its own timeout (the test left it unsent past it) */
	private static boolean timedOut(RoomModel m, Throwable e) {
		return e instanceof KVTransferException k && k.failureCause() == FailureCause.TIMEOUT && !m.sent;
	}

	// ---- invariants -----------------------------------------------------------------------------------------------

	/** Checks what must hold at any moment; throws naming every violation and the steps that led there. */
	void check() {
		long now = world.now();
		for (RoomModel m : world.rooms) {
			KVPoll s = m.receiver.poll();
			if (world.setup.ledger() != null && s != null && !s.isTerminal()) {
				long held = world.setup.ledger().retainedBytes(world.decode, m.id);
				long items = (long) world.kvBuffers * m.pages.length + (m.aux >= 0 ? 1 : 0);
				long bound = RoguePrefillWorld.LEDGER_PER_BUFFER * (world.kvBuffers + 1) + RoguePrefillWorld.LEDGER_PER_ITEM * items;
				if (held > bound) {
					world.violations.add(m + "'s ledger holds " + held + " heap bytes, more than " + bound + " for its "
							+ items + " items");
				}
			}
			if (world.virtual()) {
				checkTimes(m, s, now);
			}
			if (m.verified && !m.recycled) {
				String wrong = world.decodeMem.verify(m.id, m.pages, m.aux, new int[0]);
				if (wrong != null) {
					world.violations.add(m + " succeeded, but its pages changed since: " + wrong);
					m.verified = false;
				}
			}
			if (m.refuseNow != null && s != KVPoll.FAILED) {
				// On virtual time decode read the write in the step that made it: a write outside the grant, or of
				// bytes that landed before, is refused as it comes, not left for a later report's sums to catch.
				world.violations.add(m + " is " + s + " after a write it must refuse at once: " + m.refuseNow);
				m.refuseNow = null;
			}
			if (world.virtual() && m.mustSucceed && !m.aborted && s != KVPoll.SUCCESS) {
				world.violations.add(m + " was finished honestly while every byte it was sent was granted and sent once, but"
						+ " did not succeed: " + failure(m));
				m.mustSucceed = false;
			}
		}
		int[] free = world.freePages.stream().mapToInt(Integer::intValue).toArray();
		if (!world.decodeMem.isZero(free)) {
			world.violations.add("a page no room holds was written: free pages " + Arrays.toString(free));
		}
		if (!world.violations.isEmpty()) {
			throw new AssertionError(String.join("\n", world.violations) + "\nsteps:\n  " + String.join("\n  ", world.steps));
		}
	}

	private void checkTimes(RoomModel m, @Nullable KVPoll s, long now) {
		long timeout = world.setup.stateTimeout().toNanos();
		if (s != null && !s.isTerminal() && now - m.since > timeout) {
			world.violations.add(m + " stayed in " + s + " for " + Duration.ofNanos(now - m.since).toMillis() + " ms, past "
					+ "its timeout of " + world.setup.stateTimeout().toMillis() + " ms");
		}
		long release = world.setup.handshakeTimeout().toNanos();
		if (s == KVPoll.FAILED && !m.released && now - m.since > release) {
			world.violations.add(m + " failed " + Duration.ofNanos(now - m.since).toMillis() + " ms ago and its pages are "
					+ "not released (bound: the handshake timeout, " + world.setup.handshakeTimeout().toMillis() + " ms)");
		}
	}

	private static String failure(RoomModel m) {
		Throwable e = m.error;
		return e == null ? String.valueOf(m.receiver.poll()) : String.valueOf(e);
	}

	/**
	 * Ends the run: the good rooms still held are sent, time passes past every timeout, and then every room must have
	 * ended and released its pages, the good ones byte-exact, and a fresh room of the good rank must still succeed.
	 */
	void end() {
		world.step("end");
		for (RoomModel m : world.rooms) {
			if (!m.rogue && !m.sent && m.sender != null && !m.isTerminal()) {
				m.sent = true;
				m.sender.send(m.pages, new int[0]);
			}
		}
		world.settle();
		Duration past = world.setup.stateTimeout().plus(world.setup.handshakeTimeout()).multipliedBy(2);
		if (world.vts != null) {
			world.vts.advanceTimeBy(past);
		}
		else {
			// On real time a run does not wait for every timeout: the rooms that must succeed get their time, then
			// decode's engine gives up the rogue's rooms still live, which must then end within the abort's bound.
			List<Mono<Void>> due = new ArrayList<>();
			for (RoomModel m : world.rooms) {
				if (!m.rogue || m.mustSucceed) {
					due.add(m.done);
				}
			}
			Mono.when(due).timeout(RoguePrefillWorld.T, Mono.empty()).block();
			// Acknowledged at once, so that the rooms end without waiting out decode's bound on an abort.
			world.rogue.ackAborts(true);
			for (RoomModel m : world.rooms) {
				if (m.rogue && !m.isTerminal() && !m.mustSucceed) {
					m.aborted = true;
					m.receiver.abort("the run ends");
				}
			}
		}
		List<Mono<Void>> ends = new ArrayList<>();
		for (RoomModel m : world.rooms) {
			ends.add(m.done);
		}
		Duration wait = world.vts != null ? RoguePrefillWorld.T : world.setup.handshakeTimeout().plus(RoguePrefillWorld.T);
		try {
			Mono.when(ends).block(wait);
		}
		catch (RuntimeException e) {
			List<String> live = new ArrayList<>();
			for (RoomModel m : world.rooms) {
				if (!m.settled) {
					live.add(m.toString());
				}
			}
			world.violations.add("rooms not ended and released within " + wait.toMillis() + " ms after every timeout: "
					+ live);
		}
		for (RoomModel m : world.rooms) {
			if (!m.rogue && !m.aborted && m.receiver.poll() != KVPoll.SUCCESS && !timedOutAlready(m)) {
				world.violations.add(m + ", asked of the well-behaved prefill rank, ended " + m.receiver.poll() + ": "
						+ failure(m));
			}
			if (m.mustSucceed && !m.aborted && m.receiver.poll() != KVPoll.SUCCESS) {
				world.violations.add(m + " was finished honestly while clean, but ended " + failure(m));
			}
		}
		world.recycleAll();
		// The good rank still serves decode, byte-exact.
		int before = world.rooms.size();
		world.openGood(1, true);
		if (world.rooms.size() > before) {
			RoomModel last = world.rooms.get(before);
			last.sent = true;
			Objects.requireNonNull(last.sender, "sender").send(last.pages, new int[0]);
			world.settle();
			try {
				last.receiver.completion().block(RoguePrefillWorld.T);
			}
			catch (RuntimeException e) {
				world.violations.add("a fresh room of the well-behaved rank failed after the run: " + e);
			}
		}
		world.check();
	}

	private static boolean timedOutAlready(RoomModel m) {
		Throwable e = m.error;
		return e != null && timedOut(m, e);
	}
}
