package io.kvferry.internal;

import java.util.Arrays;
import java.util.function.Consumer;

import io.kvferry.FailureCause;
import io.kvferry.PrefillConfig;
import io.kvferry.KVPoll;
import io.kvferry.RoomPriority;
import io.kvferry.internal.stripe.StripedFlow;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.SendGate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One decode rank that asked for a prefill room: its request, and the room's data path to it. Fed under the room's
 * monitor, so the room's blocks reach the peer in the order they were made.
 */
final class PrefillDestination implements BlockOutlet {

	private static final Logger log = LoggerFactory.getLogger(PrefillDestination.class);

	private final PrefillSupport support;
	final PrefillPeer peer;
	final KVMessage.TransferRequest request;
	final int[][] stateLists;
	private final long room;
	private final StripedFlow flow;
	// Set once another decode took the room over, or this one's connection went: none of the room's queued blocks
	// goes to this rank any more.
	private volatile boolean fenced;

	/**
	 * @param room the room's id
	 * @param gate what the room's blocks and its Success are sent behind
	 */
	PrefillDestination(PrefillSupport support, PrefillPeer peer, KVMessage.TransferRequest request, long room,
			SendGate gate) {
		this.support = support;
		this.peer = peer;
		this.request = request;
		this.room = room;
		this.stateLists = StateLists.split(request.stateIndices(), request.stateCounts());
		SendGate own = new SendGate() {
			@Override
			public boolean isOpen() {
				return !fenced && gate.isOpen();
			}

			@Override
			public RoomPriority priority() {
				return gate.priority();
			}
		};
		this.flow = peer.connection.flow(room, own, support.config.firstStripeBytes());
	}

	/** Sends nothing more of the room to this rank: the room moved to another decode, or waits for one. */
	void fence() {
		fenced = true;
	}

	/** @return whether the room no longer goes to this rank */
	boolean isFenced() {
		return fenced;
	}

	/** @return whether the rank asked only to take part, for no bytes (a dummy CP or TP rank) */
	boolean isDummy() {
		return request.dummy();
	}

	@Override
	public void send(DataBlock block) {
		flow.send(block);
	}

	@Override
	public void sendKv(long room, int region, long dstOffset, int length, long srcAddress) {
		flow.sendKv(room, region, dstOffset, length, srcAddress);
	}

	@Override
	public SendGate gate() {
		return flow.gate();
	}

	/**
	 * Checks that this rank can take the chunk: its prefix, page count, aux row and state slots fit the room.
	 *
	 * @param r the room, failed here when the chunk does not fit
	 * @param feed what the engine handed the room so far
	 * @return whether the chunk was refused (the room then failed)
	 */
	boolean refuses(Room r, PrefillFeed feed, PrefillChunk c) {
		PrefillConfig config = support.config;
		int[] dstAll = request.dstPages();
		TransferPlan plan = peer.plan;
		if (!plan.wholePages(request.decodePrefixLen())) {
			r.fail(FailureCause.INCOMPATIBLE, from() + " holds a prefix of " + request.decodePrefixLen()
					+ " tokens of room " + r.id + ", not a multiple of prefill page_size " + config.kvArgs().pageSize()
					+ " and decode page_size " + plan.dstPageSize() + (plan.dcpSize() == 1 ? "" : " × decode DCP size "
					+ plan.dcpSize()) + " (expected: whole pages of the prefix on both sides)");
			return true;
		}
		int prefixPages = request.decodePrefixLen() / config.kvArgs().pageSize();
		if (prefixPages > feed.numPages) {
			r.fail(FailureCause.INCOMPATIBLE, from() + " holds a prefix of " + request.decodePrefixLen() + " tokens ("
					+ prefixPages + " pages) of room " + r.id + ", but the room has " + feed.numPages + " pages");
			return true;
		}
		if (!plan.fits(c.offset() + c.pages().length - prefixPages, dstAll.length)) {
			r.fail(FailureCause.INCOMPATIBLE, from() + " asked for " + dstAll.length + " pages of room " + r.id
					+ " after a prefix of " + prefixPages + " pages, but prefill sends "
					+ (c.offset() + c.pages().length - prefixPages) + pageSizes(config));
			return true;
		}
		if (c.last() && !plan.matches(feed.numPages - prefixPages, dstAll.length)) {
			// Fewer pages than decode asked for would leave some of its pages unwritten.
			r.fail(FailureCause.INCOMPLETE, from() + " asked for " + dstAll.length + " pages of room " + r.id
					+ " after a prefix of " + prefixPages + " pages, but the room has only "
					+ (feed.numPages - prefixPages) + " after it" + pageSizes(config));
			return true;
		}
		if (c.last() && request.auxIndex() >= 0 && feed.auxIndex < 0 && !config.kvArgs().auxRegions().isEmpty()) {
			r.fail(FailureCause.INCOMPLETE, from() + " asked for aux row " + request.auxIndex() + " of room " + r.id
					+ ", but the engine gave the room no aux row");
			return true;
		}
		String badState = c.last() ? plan.checkState(c.stateIndices(), stateLists) : null;
		if (badState != null) {
			r.fail(FailureCause.INCOMPATIBLE, badState + " for room " + r.id);
			return true;
		}
		return false;
	}

	/** @return nothing when both sides' pages hold as many tokens, else both page sizes, for a message */
	private String pageSizes(PrefillConfig config) {
		int own = config.kvArgs().pageSize();
		int dst = peer.plan.dstPageSize();
		return own == dst ? "" : " (prefill pages of " + own + " tokens, decode pages of " + dst + ": the page counts "
				+ "must hold the same tokens)";
	}

	private String from() {
		return "decode " + peer.connection.remoteAddress();
	}

	/**
	 * Queues this rank's share of the chunk (the pages past its prefix, for a CP rank its own layers), and with the
	 * room's last chunk its state slots and aux row.
	 */
	void send(PrefillFeed feed, PrefillChunk c) {
		PrefillConfig config = support.config;
		ChunkWindow w = ChunkWindow.of(c.offset(), c.pages().length, feed.numPages,
				request.decodePrefixLen() / config.kvArgs().pageSize(), config.layout(), config.allCpRanksTransfer());
		int[] srcPages = Arrays.copyOfRange(c.pages(), w.from(), w.to());
		// Positions count prefill pages: the plan maps their tokens onto decode's pages, whatever their size.
		boolean last = w.length() > 0 && c.offset() + w.to() == feed.numPages;
		TransferPlan plan = peer.plan;
		support.bytesSent.add(plan.sendKv(this, room, srcPages, w.dstFrom(), request.dstPages(), last, c.regions()));
		if (c.closes()) {
			support.pagesSent.add(w.length());
		}
		if (c.last()) {
			// A state slot the plan cannot move in full is the operator's to know, not a reason to fail the room.
			support.bytesSent.add(plan.sendState(this, room, c.stateIndices(), stateLists,
					warning -> log.warn("[{}] {}", support.name, warning)));
			support.bytesSent.add(plan.sendAux(this, room, feed.auxIndex, request.auxIndex()));
		}
		// The chunk's small blocks, grouped per stripe, go now.
		flow.flush();
	}

	/**
	 * Closes the room's data to this rank with its Success, behind the room's gate.
	 *
	 * @param written called once the Success and whatever the data path sends with it were written
	 * @param failed called for each of them that was not
	 */
	void finish(Runnable written, Consumer<Throwable> failed) {
		int rank = support.uniqueRank;
		flow.finish((bytes, checksum, fences) -> new KVMessage.Status(room, KVPoll.SUCCESS, rank, "", bytes, checksum,
				fences),
				written, failed);
	}
}
