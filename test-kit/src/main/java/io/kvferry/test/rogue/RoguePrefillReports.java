package io.kvferry.test.rogue;

import java.util.Objects;
import io.kvferry.FailureCause;
import io.kvferry.KVPoll;
import io.kvferry.ParallelLayout;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.RegionKind;
import io.kvferry.test.rogue.RoguePrefillWorld.Foreign;
import io.kvferry.test.rogue.RoguePrefillWorld.Report;
import io.kvferry.test.rogue.RoguePrefillWorld.Stray;

/**
 * What the rogue prefill says about its rooms besides their bytes: reports, honest finishes, frames for rooms it
 * was not asked and frames decode cannot read.
 */
final class RoguePrefillReports {

	private final RoguePrefillWorld world;

	RoguePrefillReports(RoguePrefillWorld world) {
		this.world = world;
	}

	/** The rogue reports on one of its rooms. */
	void report(int pick, Report kind, int stripe, int arg) {
		RoomModel m = world.asked(pick);
		if (m == null) {
			return;
		}
		RoguePrefillPeer.Session session = Objects.requireNonNull(world.rogue.asked(m.id), "asked").session();
		int s = Math.floorMod(stripe, session.width());
		RogueLink control = world.rogue.link(session, 0);
		RogueLink data = world.rogue.link(session, s == 0 ? Math.min(1, session.width() - 1) : s);
		if (control == null || data == null) {
			return;
		}
		KVMessage.Status honest = m.success(true);
		int dataStripe = rogueStripe(session, data);
		KVMessage msg;
		RogueLink on = control;
		// A report decode must fail the room for (a count or checksum that is not what landed), or one that only
		// makes the honest sums meaningless.
		boolean mustFail = true;
		boolean unclean = true;
		switch (kind) {
			case SUCCESS_AS_SENT -> {
				msg = honest;
				mustFail = false;
				unclean = m.reported;
			}
			case SUCCESS_EXTRA_BYTES -> msg = new KVMessage.Status(m.id, KVPoll.SUCCESS, 0, "", honest.bytes() + 1
					+ Math.floorMod(arg, 4096), honest.checksum(), honest.fences());
			case SUCCESS_MISSING_BYTES -> {
				if (honest.bytes() == 0) {
					return;
				}
				msg = new KVMessage.Status(m.id, KVPoll.SUCCESS, 0, "", honest.bytes() - 1 - Math.floorMod(arg,
						(int) Math.min(honest.bytes(), 4096)), honest.checksum(), honest.fences());
			}
			case SUCCESS_WRONG_CHECKSUM -> msg = new KVMessage.Status(m.id, KVPoll.SUCCESS, 0, "", honest.bytes(),
					(honest.checksum() + 1 + Math.floorMod(arg, 1000)) & 0xFFFF_FFFFL, honest.fences());
			case SUCCESS_NO_CHECKSUM -> msg = new KVMessage.Status(m.id, KVPoll.SUCCESS, 0, "", honest.bytes(),
					KVMessage.NO_CHECKSUM, honest.fences());
			case SUCCESS_WRONG_FENCES -> {
				// Naming a stripe that carried nothing only delays the verdict until a fence comes: not a lie by itself.
				int fences = (honest.fences() ^ (2 << Math.floorMod(arg, 7))) & KVMessage.Status.MAX_FENCES;
				msg = new KVMessage.Status(m.id, KVPoll.SUCCESS, 0, "", honest.bytes(), honest.checksum(), fences);
				mustFail = false;
			}
			case SUCCESS_TWICE -> {
				// The first may already have made the room succeed; the second then finds it ended.
				control.send(honest);
				world.settle();
				msg = honest;
				mustFail = false;
			}
			case FAILED -> {
				msg = new KVMessage.Status(m.id, KVPoll.FAILED, 0, "the rogue fails room " + m.id, 0,
						KVMessage.NO_CHECKSUM, 0, Math.floorMod(arg, 256), Math.floorMod(arg, 1 << 20));
				mustFail = false;
				unclean = false;
			}
			case FENCE_AS_SENT -> {
				on = data;
				msg = m.fence(dataStripe, true);
				// A fence of nothing, a second one, or one on stripe 0 breaks the rules; an exact one does not.
				mustFail = false;
				unclean = dataStripe == 0 || m.stripeBytes[dataStripe] == 0 || (m.fenced & 1 << dataStripe) != 0;
			}
			case FENCE_WRONG_BYTES -> {
				on = data;
				KVMessage.Fence f = m.fence(dataStripe, true);
				msg = new KVMessage.Fence(m.id, f.bytes() + 1 + Math.floorMod(arg, 100), f.checksum());
			}
			case FENCE_WRONG_CHECKSUM -> {
				on = data;
				KVMessage.Fence f = m.fence(dataStripe, true);
				msg = new KVMessage.Fence(m.id, f.bytes(), (f.checksum() + 1) & 0xFFFF_FFFFL);
			}
			case FENCE_TWICE -> {
				on = data;
				KVMessage.Fence f = m.fence(dataStripe, true);
				data.send(f);
				world.settle();
				msg = f;
			}
			default -> throw new IllegalStateException(kind.toString());
		}
		world.step("rogue sends " + msg + " on " + on + " for " + m);
		world.touched(m);
		boolean fence = msg instanceof KVMessage.Fence;
		int stripeOfMsg = fence ? dataStripe : 0;
		if (mustFail) {
			world.writes.judged(m, stripeOfMsg, "the rogue sent " + kind + ": " + msg);
		}
		if (unclean) {
			m.clean = false;
		}
		if (fence) {
			m.fenced |= 1 << dataStripe;
		}
		else {
			if (kind == Report.SUCCESS_AS_SENT && !m.reported && m.clean && complete(m) && fencesSent(m) && !m.aborted
					&& !m.isTerminal() && intact(session)) {
				m.mustSucceed = true;
			}
			m.reported = true;
		}
		on.send(msg);
		world.settle();
		world.check();
	}

	/** @return whether the session may still carry a room to its end: not broken, every stripe open */
	private boolean intact(RoguePrefillPeer.Session s) {
		if (world.doomed.contains(s)) {
			return false;
		}
		for (int i = 0; i < s.width(); i++) {
			RogueLink l = world.rogue.link(s, i);
			if (l == null || !l.isOpen()) {
				return false;
			}
		}
		return true;
	}

	private static int rogueStripe(RoguePrefillPeer.Session s, RogueLink l) {
		for (int i = 0; i < s.stripes.length; i++) {
			if (s.stripes[i] == l) {
				return i;
			}
		}
		return 0;
	}

	private static boolean fencesSent(RoomModel m) {
		return (m.fenced & m.fences()) == m.fences();
	}

	/** @return whether every granted byte of the room was written */
	private static boolean complete(RoomModel m) {
		for (byte[] counts : m.kvCounts) {
			for (byte c : counts) {
				if (c == 0) {
					return false;
				}
			}
		}
		for (byte c : m.auxCounts) {
			if (c == 0) {
				return false;
			}
		}
		return true;
	}

	/**
	 * The rogue finishes a room as an honest rank would: every granted byte not written yet, once, on one stripe, then
	 * each stripe's fence and the Success. A room that was clean must then succeed.
	 */
	void finish(int pick, int stripe) {
		RoomModel m = world.asked(pick);
		if (m == null) {
			return;
		}
		RoguePrefillPeer.Session session = Objects.requireNonNull(world.rogue.asked(m.id), "asked").session();
		int s = Math.floorMod(stripe, session.width());
		RogueLink link = world.rogue.link(session, s);
		RogueLink control = world.rogue.link(session, 0);
		if (link == null || control == null) {
			return;
		}
		int[] srcPages = world.writes.source(m);
		world.step("rogue finishes " + m + " on stripe " + s);
		world.touched(m);
		for (int buf = 0; buf < world.kvBuffers; buf++) {
			for (int pos = 0; pos < m.pages.length; pos++) {
				int from = -1;
				for (int b = 0; b <= world.itemLen; b++) {
					boolean missing = b < world.itemLen && m.kvCounts[buf][pos * world.itemLen + b] == 0;
					if (missing && from < 0) {
						from = b;
					}
					else if (!missing && from >= 0) {
						long dst = (long) m.pages[pos] * world.itemLen + from;
						sendQuiet(m, world.writes.kvWrite(s, m, buf, dst, world.writes.kv(buf).itemAddress(srcPages[pos]) + from, b - from),
								link);
						from = -1;
					}
				}
			}
		}
		if (m.aux >= 0) {
			int from = -1;
			for (int b = 0; b <= world.auxLen; b++) {
				boolean missing = b < world.auxLen && m.auxCounts[b] == 0;
				if (missing && from < 0) {
					from = b;
				}
				else if (!missing && from >= 0) {
					sendQuiet(m, new RoomModel.Write(s, new DataHeader(m.id, RegionKind.AUX, 0, (long) m.aux * world.auxLen
							+ from, b - from, 0, 1), world.rogueMem.kvArgs().auxRegions().get(0).itemAddress(m.srcAux) + from,
							0), link);
					from = -1;
				}
			}
		}
		for (int i = 1; i < session.width(); i++) {
			RogueLink l = world.rogue.link(session, i);
			if (l != null && m.stripeBytes[i] > 0 && (m.fenced & 1 << i) == 0) {
				m.fenced |= 1 << i;
				l.send(m.fence(i, true));
			}
		}
		if (m.clean && !m.reported && !m.aborted && !m.isTerminal() && intact(session)) {
			m.mustSucceed = true;
		}
		m.reported = true;
		control.send(m.success(true));
		world.settle();
		world.check();
	}

	private void sendQuiet(RoomModel m, RoomModel.Write w, RogueLink link) {
		if ((m.fenced & 1 << w.stripe()) != 0 || m.reported) {
			m.clean = false;
		}
		world.writes.countGranted(m, w);
		m.tally(w);
		link.data(w.header(), w.srcAddress(), w.srcStride());
	}

	/** The rogue sends a frame naming a room it was not asked for: another rank's room, or one nobody opened. */
	void foreign(Foreign kind, int pick, boolean known, int stripe) {
		RoguePrefillPeer.Session s = world.rogue.current();
		RogueLink l = s == null ? null : world.rogue.link(s, Math.floorMod(stripe, s.width()));
		if (s == null || l == null) {
			return;
		}
		RoomModel target = known ? world.pick(pick, r -> !r.rogue) : null;
		long room = target != null ? target.id : 1_000_000 + Math.floorMod(pick, 1000);
		int page = target != null ? target.pages[0] : 0;
		KVMessage msg = switch (kind) {
			case DATA -> null;
			case FENCE -> new KVMessage.Fence(room, world.itemLen, KVMessage.NO_CHECKSUM);
			case SUCCESS -> new KVMessage.Status(room, KVPoll.SUCCESS, 0, "", world.itemLen, KVMessage.NO_CHECKSUM);
			case FAILED -> KVMessage.Status.failed(room, 0, FailureCause.PEER_FAILED, "the rogue fails room " + room,
					0);
			case ABORT_ACK -> new KVMessage.AbortAck(room);
		};
		world.step("rogue sends " + (msg == null ? "data" : msg) + " for " + (target == null ? "unknown room " + room
				: target) + " on " + l);
		if (target != null) {
			world.doom(s);
		}
		if (msg == null) {
			l.data(new DataHeader(room, RegionKind.KV, 0, (long) page * world.itemLen, world.itemLen, 0, 1), world.writes.kv(0).address(), 0);
		}
		else {
			l.send(msg);
		}
		world.settle();
		world.check();
	}

	/** The rogue sends a control message prefill never sends, or never then. */
	void stray(Stray kind, int pick, int stripe) {
		RoguePrefillPeer.Session s = world.rogue.current();
		RogueLink l = s == null ? null : world.rogue.link(s, Math.floorMod(stripe, s.width()));
		if (s == null || l == null) {
			return;
		}
		RoomModel m = world.asked(pick);
		long room = m != null ? m.id : 1;
		KVMessage msg = switch (kind) {
			case HELLO_ACK -> new KVMessage.HelloAck(io.kvferry.spi.PeerLayout.of(world.rogueMem.kvArgs(),
					ParallelLayout.SINGLE));
			case JOINED -> new KVMessage.Joined(Math.floorMod(pick, 8));
			case REJECT -> new KVMessage.Reject("the rogue rejects, late");
			case DRAINING -> new KVMessage.Draining("the rogue drains");
			case STATUS_ON_DATA_STRIPE -> m == null ? null : m.success(true);
			case ABORT_ACK -> new KVMessage.AbortAck(room);
			case RENEW -> new KVMessage.Renew(new long[] { room });
			case TRANSFER_REQUEST -> new KVMessage.TransferRequest(room, new int[] { 0 }, -1, new int[0], 1, false);
			case HELLO -> new KVMessage.Hello(KVMessage.PROTOCOL_VERSION, io.kvferry.spi.PeerLayout.of(
					world.rogueMem.kvArgs(), ParallelLayout.SINGLE));
			case JOIN -> new KVMessage.Join(pick, 1);
		};
		if (msg == null) {
			return;
		}
		if (kind == Stray.STATUS_ON_DATA_STRIPE) {
			RogueLink data = world.rogue.link(s, s.width() - 1);
			if (data == null) {
				return;
			}
			l = data;
		}
		if (m != null && kind == Stray.STATUS_ON_DATA_STRIPE) {
			m.clean = false;
		}
		world.step("rogue sends stray " + msg + " on " + l);
		world.doom(s);
		l.send(msg);
		world.settle();
		world.check();
	}

	/** The rogue writes a frame no peer writes (where its transport carries bytes). */
	void forge(Forgery forgery, int pick, int stripe) {
		RoguePrefillPeer.Session s = world.rogue.current();
		RogueLink l = s == null ? null : world.rogue.link(s, Math.floorMod(stripe, s.width()));
		if (s == null || l == null) {
			return;
		}
		RoomModel m = world.asked(pick);
		if (l.forge(forgery, m == null ? 1 : m.id)) {
			world.step("rogue forges " + forgery + " on " + l);
			world.doom(s);
			if (m != null) {
				m.clean = false;
			}
			world.settle();
			world.check();
		}
	}
}
