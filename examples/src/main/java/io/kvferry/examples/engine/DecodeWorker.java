package io.kvferry.examples.engine;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import io.kvferry.KVPoll;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Mono;

/**
 * The decode instance's scheduler, as SGLang's decode loop runs it: {@link #admit} pre-allocates a request's pages and
 * aux row and tells prefill where they are; {@link #run} is the loop that moves requests whose KV has landed into the
 * running batch and runs one decode step for each running request per iteration, continuing from the transferred KV
 * without computing the prompt again (decode never sees the prompt's tokens, only its length).
 *
 * <p>Threading: the room's state stream calls back on transport threads, which only put the room on a queue; the
 * scheduler thread (the one in {@link #run}) owns the page tables, the batch and every read and write of the cache.
 * When the batch is empty it waits on that queue, bounded, instead of polling.
 */
public final class DecodeWorker {

	private static final Logger log = LoggerFactory.getLogger(DecodeWorker.class);

	/** Watches requests as their KV lands; called on the scheduler thread. */
	public interface Listener {

		/**
		 * The room's KV and aux row have landed and were accepted; decoding starts right after.
		 *
		 * @param room the room
		 * @param cache the decode cache
		 * @param table the request's pages, holding the prompt's KV
		 */
		void landed(long room, PagedKVCache cache, PageTable table);
	}

	private final TinyTransformer model;
	private final PagedKVCache cache;
	private final KVFerryLink link;
	private final Listener listener;
	private final BlockingQueue<Request> settled = new LinkedBlockingQueue<>();
	private final Map<Long, Request> transferring = new LinkedHashMap<>();
	private final List<Request> running = new ArrayList<>();
	private final List<Generation> finished = new ArrayList<>();

	/**
	 * @param model the model
	 * @param cache the decode instance's cache, registered with {@code link}
	 * @param link the decode ranks
	 * @param listener told when each request's KV has landed
	 */
	public DecodeWorker(TinyTransformer model, PagedKVCache cache, KVFerryLink link, Listener listener) {
		this.model = model;
		this.cache = cache;
		this.link = link;
		this.listener = listener;
	}

	private static final class Request {
		final long room;
		final int[] prompt;
		final int newTokens;
		final PageTable table = new PageTable();
		final int auxRow;
		final List<KVPoll> states = new CopyOnWriteArrayList<>();
		KVFerryLink.Room transfer;
		volatile Throwable failure;
		Decoding decoding;

		Request(long room, int[] prompt, int newTokens, int auxRow) {
			this.room = room;
			this.prompt = prompt;
			this.newTokens = newTokens;
			this.auxRow = auxRow;
		}
	}

	/**
	 * Admits a request: its pages and aux row, and the room that tells prefill where they are.
	 *
	 * @param room the request's room
	 * @param prompt the prompt; only its length is used, and kept for the result
	 * @param newTokens decode steps after the first token
	 */
	public void admit(long room, int[] prompt, int newTokens) {
		Request r = new Request(room, prompt, newTokens, cache.allocateAuxRow());
		cache.reserve(r.table, prompt.length);
		r.transfer = link.receive(room, r.table.pages(), r.auxRow);
		transferring.put(room, r);
		r.transfer.states()
				.doOnNext(r.states::add)
				.then(r.transfer.completion())
				.subscribe(null, e -> {
					r.failure = e;
					settled.add(r);
				}, () -> settled.add(r));
	}

	/**
	 * Runs the loop until every admitted request has generated its tokens or failed.
	 *
	 * @param timeout bound of the whole loop; requests still waiting then are aborted and reported failed
	 * @return one result per request, in the order they finished
	 * @throws InterruptedException when interrupted while waiting for a transfer
	 */
	public List<Generation> run(Duration timeout) throws InterruptedException {
		long deadline = System.nanoTime() + timeout.toNanos();
		while (!transferring.isEmpty() || !running.isEmpty()) {
			// Block only when there is nothing to decode; otherwise take whatever landed and keep decoding.
			Request r = running.isEmpty() ? settled.poll(deadline - System.nanoTime(), TimeUnit.NANOSECONDS)
					: settled.poll();
			if (r == null && running.isEmpty()) {
				abortAll("decode gave up waiting after " + timeout);
				break;
			}
			for (; r != null; r = settled.poll()) {
				admitLanded(r);
			}
			for (Iterator<Request> it = running.iterator(); it.hasNext();) {
				Request q = it.next();
				q.decoding.step(model, cache);
				if (q.decoding.done()) {
					it.remove();
					cache.release(q.table);
					finished.add(new Generation(q.room, q.prompt, q.decoding.tokens(), q.decoding.logits(),
							List.copyOf(q.states), null));
				}
			}
		}
		return List.copyOf(finished);
	}

	// SGLang's metadata gate: Success alone does not make the row trustworthy; its room stamp must match on every rank.
	private void admitLanded(Request r) {
		transferring.remove(r.room);
		if (r.failure != null) {
			fail(r, r.failure.getMessage());
			return;
		}
		int first = cache.ranks().get(0).auxToken(r.auxRow);
		for (RankKVCache rank : cache.ranks()) {
			if (rank.auxRoom(r.auxRow) != r.room || rank.auxToken(r.auxRow) != first) {
				fail(r, "aux row " + r.auxRow + " of rank " + rank.rank() + " : room " + rank.auxRoom(r.auxRow)
						+ ", token " + rank.auxToken(r.auxRow) + " (expected: room " + r.room + ", token " + first + ")");
				return;
			}
		}
		cache.releaseAuxRow(r.auxRow);
		listener.landed(r.room, cache, r.table);
		log.debug("room {}: KV landed in pages {}, first token {}", r.room, r.table, first);
		r.decoding = new Decoding(r.table, r.prompt.length, first, r.newTokens);
		running.add(r);
	}

	// Pages of a failed room are fenced until every rank is done with it: only then do they go back to the pool.
	private void fail(Request r, String reason) {
		log.warn("room {}: failed: {}", r.room, reason);
		finished.add(new Generation(r.room, r.prompt, new int[0], new float[0][], List.copyOf(r.states), reason));
		r.transfer.abort(reason);
		r.transfer.completion().onErrorResume(e -> Mono.empty()).subscribe(null, null, () -> {
			cache.release(r.table);
			cache.releaseAuxRow(r.auxRow);
		});
	}

	private void abortAll(String reason) {
		for (Request r : List.copyOf(transferring.values())) {
			transferring.remove(r.room);
			fail(r, reason);
		}
	}
}
