package io.kvferry.examples.engine;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Mono;

/**
 * The prefill instance's scheduler step for one request, as SGLang's prefill loop runs it with chunked prefill: take
 * pages and an aux row, open the room, run the prompt chunk by chunk, and after each chunk hand kvferry the pages that
 * chunk completed. A page whose last slot is not yet written waits for the next chunk; the last chunk also sends the
 * partial page, after the first sampled token went into the aux row. The pages stay untouched until the transfer
 * ends, then go back to the pool. One thread calls {@link #prefill} at a time.
 */
public final class PrefillWorker {

	private static final Logger log = LoggerFactory.getLogger(PrefillWorker.class);

	private final TinyTransformer model;
	private final PagedKVCache cache;
	private final KVFerryLink link;
	private final int chunkTokens;

	/**
	 * @param model the model
	 * @param cache the prefill instance's cache, registered with {@code link}
	 * @param link the prefill ranks
	 * @param chunkTokens prompt tokens per forward chunk
	 */
	public PrefillWorker(TinyTransformer model, PagedKVCache cache, KVFerryLink link, int chunkTokens) {
		if (chunkTokens < 1) {
			throw new IllegalArgumentException("chunkTokens : " + chunkTokens + " (expected: >= 1)");
		}
		this.model = model;
		this.cache = cache;
		this.link = link;
		this.chunkTokens = chunkTokens;
	}

	/**
	 * Prefills one request and sends its KV.
	 *
	 * @param room the request's room
	 * @param prompt its tokens
	 * @return completes when every rank's transfer succeeded (pages and aux row are free again by then)
	 */
	public Mono<Void> prefill(long room, int[] prompt) {
		PageTable table = new PageTable();
		cache.reserve(table, prompt.length);
		int auxRow = cache.allocateAuxRow();
		KVFerryLink.Room out = link.send(room, table.size(), auxRow);
		int pageSize = cache.pageSize();
		int sent = 0;
		for (int start = 0; start < prompt.length; start += chunkTokens) {
			int end = Math.min(prompt.length, start + chunkTokens);
			float[] logits = model.prefill(prompt, start, end, cache, table);
			boolean last = end == prompt.length;
			int ready = last ? table.size() : end / pageSize;
			if (last) {
				int first = TinyTransformer.argmax(logits);
				cache.ranks().forEach(r -> r.writeAux(auxRow, first, room));
			}
			if (ready > sent || last) {
				out.send(table.pages(sent, ready));
				sent = ready;
			}
		}
		log.debug("room {}: prefilled {} tokens into pages {}", room, prompt.length, table);
		Mono<Void> done = out.completion()
				.doFinally(signal -> {
					cache.release(table);
					cache.releaseAuxRow(auxRow);
				})
				.cache();
		// Subscribed here so that the pages come back even when nobody waits for the result.
		done.subscribe(null, e -> log.warn("room {}: transfer failed: {}", room, e.getMessage()));
		return done;
	}
}
