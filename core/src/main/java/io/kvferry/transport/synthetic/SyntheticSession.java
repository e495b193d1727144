package io.kvferry.transport.synthetic;

import java.util.Arrays;
import java.util.concurrent.ConcurrentHashMap;

import io.kvferry.DecodeSpec;
import io.kvferry.FailureCause;
import io.kvferry.KVPoll;
import io.kvferry.ParallelLayout;
import io.kvferry.spi.CloseReason;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.PeerLayout;
import org.jspecify.annotations.Nullable;

/**
 * A decode rank's session with a synthetic prefill rank: the handshake, answered with a layout that mirrors decode's
 * (its main-model KV buffers, aux and state, the same model fingerprint), the further stripes that join it, and the
 * rooms decode asks: each is checked, paced by the instance's room rate, dealt over the stripes, and ends with the
 * Success that reports what was sent (with the CRC32C of stripe 0's bytes when decode asked for checksums), or with
 * the acknowledgement of decode's abort on every stripe.
 */
final class SyntheticSession {

	private final SyntheticPrefill source;
	private final SyntheticPrefill.Rank rank;
	// The mirror of decode's layout, and decode's layout: replaced, on stripe 0's thread, when decode re-registers its
	// regions; each room keeps the pair it was made with.
	private volatile PeerLayout own;
	private volatile PeerLayout decode;
	// The generation of decode's regions the pair is for: 0 from the handshake. Stripe 0's thread only.
	private int generation;
	private final boolean checksums;
	final long token;
	private final int width;
	// Stripe k's lane at k, set on that lane's thread when it joined; guarded by this.
	private final Lane[] lanes;
	private final ConcurrentHashMap<Long, ServedRoom> rooms = new ConcurrentHashMap<>();
	private volatile boolean closed;

	private SyntheticSession(SyntheticPrefill source, SyntheticPrefill.Rank rank, PeerLayout own,
			KVMessage.Hello hello, long token) {
		this.source = source;
		this.rank = rank;
		this.own = own;
		this.decode = hello.layout();
		this.checksums = hello.checksums();
		this.token = token;
		this.width = hello.stripes();
		this.lanes = new Lane[width];
	}

	/** A lane's first message: {@code HELLO} opens a session, {@code JOIN} attaches the lane to one; on its thread. */
	static void open(SyntheticPrefill source, Lane lane, KVMessage message) {
		if (message instanceof KVMessage.Hello hello) {
			String refused = refusal(source, lane.rank, hello);
			if (refused != null) {
				reject(lane, refused);
				return;
			}
			SyntheticSession s = new SyntheticSession(source, lane.rank, mirror(lane.rank, hello.layout()), hello,
					hello.stripes() > 1 ? source.newToken() : 0);
			s.lanes[0] = lane;
			lane.attach(s, 0);
			if (s.token != 0) {
				source.joinable(s);
			}
			lane.deliver(new KVMessage.HelloAck(s.own, s.token, lane.rank.incarnation()));
		}
		else if (message instanceof KVMessage.Join join) {
			SyntheticSession s = join.token() == 0 ? null : source.joining(join.token());
			if (s == null || s.rank != lane.rank || !s.attach(lane, join.stripe())) {
				reject(lane, "stripe " + join.stripe() + " names no session waiting for it");
				return;
			}
			lane.deliver(new KVMessage.Joined(join.stripe()));
		}
		else {
			lane.refuse("the first message was " + message.getClass().getSimpleName() + " (expected: HELLO or JOIN)");
		}
	}

	private static void reject(Lane lane, String reason) {
		String text = "synthetic prefill rank " + lane.rank.endpoint() + " rejected decode: " + reason;
		lane.deliver(new KVMessage.Reject(text));
		lane.refuse(text);
	}

	private synchronized boolean attach(Lane lane, int stripe) {
		if (closed || stripe < 1 || stripe >= width || lanes[stripe] != null) {
			return false;
		}
		lanes[stripe] = lane;
		lane.attach(this, stripe);
		return true;
	}

	/**
	 * @return why a synthetic rank cannot serve this decode rank, or null: it mirrors decode's layout rank for rank,
	 *         so the instance's sizes and page size must be decode's
	 */
	private static @Nullable String refusal(SyntheticPrefill source, SyntheticPrefill.Rank rank,
			KVMessage.Hello hello) {
		PeerLayout d = hello.layout();
		ParallelLayout p = d.parallel();
		if (hello.protocolVersion() != KVMessage.PROTOCOL_VERSION) {
			return "protocol version " + hello.protocolVersion() + " (expected: " + KVMessage.PROTOCOL_VERSION + ")";
		}
		if (hello.stripes() < 1 || hello.stripes() > DecodeSpec.MAX_STRIPES) {
			return "stripes " + hello.stripes() + " (expected: 1.." + DecodeSpec.MAX_STRIPES + ")";
		}
		if (p.attnTpSize() != source.attnTpSize() || p.ppSize() != source.ppSize() || p.attnCpSize() != 1) {
			return "decode attn_tp_size=" + p.attnTpSize() + " pp_size=" + p.ppSize() + " attn_cp_size="
					+ p.attnCpSize() + " (expected: the synthetic instance's attn_tp_size=" + source.attnTpSize()
					+ " pp_size=" + source.ppSize() + " attn_cp_size=1: it mirrors decode's layout rank for rank)";
		}
		if (p.ppRank() != rank.pp()) {
			return "decode pp_rank=" + p.ppRank() + " asked synthetic pp rank " + rank.pp()
					+ " (expected: the same stage)";
		}
		if (d.pageSize() != source.pageSize()) {
			return "decode page_size=" + d.pageSize() + " (expected: the synthetic instance's page_size="
					+ source.pageSize() + ")";
		}
		if (mainBuffers(d) < 1) {
			return "decode registers no KV buffer of the main model";
		}
		return null;
	}

	/** @return KV buffers of the main model at the start of the layout's list: draft-model layers come after them */
	private static int mainBuffers(PeerLayout d) {
		int perLayer = d.mla() ? 1 : 2;
		return d.kv().size() - perLayer * d.draftLayers();
	}

	/**
	 * @return the synthetic rank's layout: decode's model, heads, page size, aux and state, its main-model KV buffers
	 *         (decode's draft layers are its own engine's), at this rank's place in the instance
	 */
	private static PeerLayout mirror(SyntheticPrefill.Rank rank, PeerLayout d) {
		ParallelLayout place = new ParallelLayout(d.parallel().attnTpSize(), rank.tp(), 1, 0, 1, 0,
				d.parallel().ppSize(), rank.pp());
		return new PeerLayout(rank.tp(), place, d.pageSize(), d.mla(), d.dtype(), d.kvHeadNum(), d.totalKvHeadNum(),
				d.startLayer(), 0, d.kv().subList(0, mainBuffers(d)), d.aux(), d.state(), d.stateKinds(),
				d.stateTpDims(), false, false, d.modelId(), d.modelLayers(), d.kvLayout());
	}

	/** A control message on stripe 0, on its thread. */
	void onMessage(Lane lane, KVMessage message) {
		if (message instanceof KVMessage.TransferRequest req) {
			request(lane, req);
		}
		else if (message instanceof KVMessage.Abort abort) {
			ServedRoom r = rooms.remove(abort.room());
			if (r != null) {
				r.aborted = true;
			}
			// Every stripe answers once it sent its last byte of the room, a room it never had included.
			for (Lane l : attached()) {
				l.post(() -> l.abortAck(abort.room()));
			}
		}
		else if (message instanceof KVMessage.Layout layout) {
			relayout(lane, layout);
		}
		else if (!(message instanceof KVMessage.Renew)) {
			// A renewal is harmless although no lease was announced; anything else does not belong here.
			lane.refuse("unexpected " + message.getClass().getSimpleName() + " on stripe 0");
		}
	}

	/**
	 * Decode re-registered its regions: later rooms are served into the new layout. Its generation must move forward
	 * and its sizes stay the ones this rank mirrors; otherwise the session ends, naming why.
	 */
	private void relayout(Lane lane, KVMessage.Layout layout) {
		PeerLayout d = layout.layout();
		String refused = layout.generation() <= generation ? "layout generation " + layout.generation() + " after "
				+ generation + " (expected: a larger one)"
				: d.pageSize() != decode.pageSize() || d.mla() != decode.mla() || !d.parallel().equals(decode.parallel())
						|| mainBuffers(d) != mainBuffers(decode) || d.aux().size() != decode.aux().size()
						|| d.state().size() != decode.state().size()
								? "a re-registered layout of other sizes than the handshake's (expected: only the "
										+ "regions' item lengths and counts change)"
								: null;
		if (refused != null) {
			lane.refuse(refused);
			return;
		}
		generation = layout.generation();
		decode = d;
		own = mirror(rank, d);
	}

	private void request(Lane lane, KVMessage.TransferRequest req) {
		int joined = attached().length;
		String refused = rooms.containsKey(req.room()) ? "room " + req.room() + " is already in flight"
				: joined < width ? "only " + joined + " of the session's " + width + " stripes joined"
						: ServedRoom.refusal(decode, req);
		if (refused != null) {
			lane.deliver(KVMessage.Status.failed(req.room(), rank.unique(), FailureCause.PROTOCOL,
					"synthetic prefill rank " + rank.endpoint() + " refused room " + req.room() + ": " + refused, 0));
			return;
		}
		ServedRoom r = new ServedRoom(own, decode, req, width, checksums);
		rooms.put(r.id, r);
		long wait = source.paceRoom();
		if (wait > 0) {
			lane.later(() -> start(r), wait);
		}
		else {
			start(r);
		}
	}

	/** Deals the room's blocks to the stripes; on stripe 0's thread. */
	private void start(ServedRoom r) {
		if (r.aborted || closed) {
			return;
		}
		int n = r.stripesWithBytes();
		if (n == 0) {
			success(r);
			return;
		}
		Lane[] all = lanes();
		for (int s = 0; s < n; s++) {
			Lane l = all[s];
			l.post(() -> l.serve(r));
		}
	}

	/** The last stripe sent its share of the room: the Success goes on stripe 0, after its own bytes. */
	void succeed(ServedRoom r) {
		Lane first = lanes()[0];
		first.post(() -> success(r));
	}

	private void success(ServedRoom r) {
		if (r.aborted || !rooms.remove(r.id, r)) {
			return;
		}
		long bytes = 0;
		int fences = 0;
		for (int s = 0; s < width; s++) {
			long sent = r.sentOn(s);
			bytes += sent;
			if (s > 0 && sent > 0) {
				fences |= 1 << s;
			}
		}
		lanes()[0].deliver(new KVMessage.Status(r.id, KVPoll.SUCCESS, rank.unique(), "", bytes, r.checksumOn(0),
				fences));
		source.served();
	}

	/** A stripe closed: the whole session goes, as one stripe alone cannot serve decode. */
	void laneClosed(Lane lane, CloseReason reason) {
		Lane[] all;
		synchronized (this) {
			if (closed) {
				return;
			}
			closed = true;
			all = lanes.clone();
		}
		source.forget(this);
		for (ServedRoom r : rooms.values()) {
			r.aborted = true;
		}
		rooms.clear();
		for (Lane l : all) {
			if (l != null && l != lane) {
				l.refuse("stripe " + lane.stripe() + " of its session closed: " + reason);
			}
		}
	}

	private synchronized Lane[] lanes() {
		return lanes.clone();
	}

	private Lane[] attached() {
		Lane[] all = lanes();
		int n = 0;
		for (Lane l : all) {
			if (l != null) {
				all[n++] = l;
			}
		}
		return Arrays.copyOf(all, n);
	}
}
