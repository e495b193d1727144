package io.kvferry.internal;

import java.util.Arrays;
import java.util.function.Consumer;

import io.kvferry.FailureCause;
import io.kvferry.PrefillConfig;
import io.kvferry.KVPoll;
import io.kvferry.internal.stripe.StripedFlow;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.SendGate;

/**
 * One decode rank that asked for a prefill room: its request, and the room's data path to it. Fed under the room's
 * monitor, so the room's blocks reach the peer in the order they were made.
 */
final class PrefillDestination implements BlockOutlet {

	final PrefillSession session;
	final KVMessage.TransferRequest request;
	final int[][] stateLists;
	private final StripedFlow flow;

	PrefillDestination(PrefillTransfer room, PrefillSession session, KVMessage.TransferRequest request) {
		this.session = session;
		this.request = request;
		this.stateLists = StateLists.split(request.stateIndices(), request.stateCounts());
		this.flow = session.connection.flow(room.id, room.gate, session.manager.config.firstStripeBytes());
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
	public SendGate gate() {
		return flow.gate();
	}

	/**
	 * Checks that this rank can take the chunk: its prefix, page count, aux row and state slots fit the room.
	 *
	 * @return whether the chunk was refused (the room then failed)
	 */
	boolean refuses(PrefillTransfer r, PrefillChunk c) {
		PrefillConfig config = session.manager.config;
		int[] dstAll = request.dstPages();
		TransferPlan plan = session.plan;
		if (!plan.wholePages(request.decodePrefixLen())) {
			r.fail(FailureCause.INCOMPATIBLE, from() + " holds a prefix of " + request.decodePrefixLen()
					+ " tokens of room " + r.id + ", not a multiple of prefill page_size " + config.kvArgs().pageSize()
					+ " and decode page_size " + plan.dstPageSize() + (plan.dcpSize() == 1 ? "" : " × decode DCP size "
					+ plan.dcpSize()) + " (expected: whole pages of the prefix on both sides)");
			return true;
		}
		int prefixPages = request.decodePrefixLen() / config.kvArgs().pageSize();
		if (prefixPages > r.feed.numPages) {
			r.fail(FailureCause.INCOMPATIBLE, from() + " holds a prefix of " + request.decodePrefixLen() + " tokens ("
					+ prefixPages + " pages) of room " + r.id + ", but the room has " + r.feed.numPages + " pages");
			return true;
		}
		if (!plan.fits(c.offset() + c.pages().length - prefixPages, dstAll.length)) {
			r.fail(FailureCause.INCOMPATIBLE, from() + " asked for " + dstAll.length + " pages of room " + r.id
					+ " after a prefix of " + prefixPages + " pages, but prefill sends "
					+ (c.offset() + c.pages().length - prefixPages) + pageSizes(config));
			return true;
		}
		if (c.last() && !plan.matches(r.feed.numPages - prefixPages, dstAll.length)) {
			// Fewer pages than decode asked for would leave some of its pages unwritten.
			r.fail(FailureCause.INCOMPLETE, from() + " asked for " + dstAll.length + " pages of room " + r.id
					+ " after a prefix of " + prefixPages + " pages, but the room has only "
					+ (r.feed.numPages - prefixPages) + " after it" + pageSizes(config));
			return true;
		}
		if (c.last() && request.auxIndex() >= 0 && r.feed.auxIndex < 0 && !config.kvArgs().auxRegions().isEmpty()) {
			r.fail(FailureCause.INCOMPLETE, from() + " asked for aux row " + request.auxIndex() + " of room " + r.id
					+ ", but the engine gave the room no aux row");
			return true;
		}
		String badState = c.last() ? session.plan.checkState(c.stateIndices(), stateLists) : null;
		if (badState != null) {
			r.fail(FailureCause.INCOMPATIBLE, badState + " for room " + r.id);
			return true;
		}
		return false;
	}

	/** @return nothing when both sides' pages hold as many tokens, else both page sizes, for a message */
	private String pageSizes(PrefillConfig config) {
		int own = config.kvArgs().pageSize();
		int dst = session.plan.dstPageSize();
		return own == dst ? "" : " (prefill pages of " + own + " tokens, decode pages of " + dst + ": the page counts "
				+ "must hold the same tokens)";
	}

	private String from() {
		return "decode " + session.connection.remoteAddress();
	}

	/**
	 * Queues this rank's share of the chunk (the pages past its prefix, for a CP rank its own layers), and with the
	 * room's last chunk its state slots and aux row.
	 */
	void send(PrefillTransfer r, PrefillChunk c) {
		DefaultPrefillKVManager m = session.manager;
		PrefillConfig config = m.config;
		ChunkWindow w = ChunkWindow.of(c.offset(), c.pages().length, r.feed.numPages,
				request.decodePrefixLen() / config.kvArgs().pageSize(), config.layout(), config.allCpRanksTransfer());
		int[] srcPages = Arrays.copyOfRange(c.pages(), w.from(), w.to());
		// Positions count prefill pages: the plan maps their tokens onto decode's pages, whatever their size.
		boolean last = w.length() > 0 && c.offset() + w.to() == r.feed.numPages;
		TransferPlan plan = session.plan;
		m.bytesSent.add(plan.sendKv(this, r.id, srcPages, w.dstFrom(), request.dstPages(), last, c.regions()));
		if (c.closes()) {
			m.pagesSent.add(w.length());
		}
		if (c.last()) {
			m.bytesSent.add(plan.sendState(this, r.id, c.stateIndices(), stateLists, m::warn));
			m.bytesSent.add(plan.sendAux(this, r.id, r.feed.auxIndex, request.auxIndex()));
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
	void finish(long room, Runnable written, Consumer<Throwable> failed) {
		int rank = session.manager.uniqueRank;
		flow.finish((bytes, checksum, fences) -> new KVMessage.Status(room, KVPoll.SUCCESS, rank, "", bytes, checksum,
				fences),
				written, failed);
	}
}
