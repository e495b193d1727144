package io.kvferry.examples.engine;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Random;

import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.kvferry.transport.netty.NettyKVTransport;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * The tiny transformer served two ways: {@linkplain #runInOneProcess in one process} (prefill and decode on one cache,
 * the reference), and {@linkplain #runDisaggregated disaggregated}: a prefill instance and a decode instance, each
 * with its own TP ranks, caches, kvferry managers and transport, an embedded bootstrap server, TCP on 127.0.0.1. Decode
 * continues from the KV prefill computed; both ways must give the same tokens and logits.
 *
 * @param model the model
 * @param prefillTp attention TP size of the prefill instance
 * @param decodeTp attention TP size of the decode instance
 * @param pageSize tokens per page
 * @param chunkTokens prompt tokens per prefill forward chunk
 * @param newTokens decode steps per request after the first token
 */
public record TinyEngine(TinyConfig model, int prefillTp, int decodeTp, int pageSize, int chunkTokens,
		int newTokens) {

	private static final Logger log = LoggerFactory.getLogger(TinyEngine.class);

	/** Bound of each state of a room, and of a whole run's decode loop. */
	public static final Duration TIMEOUT = Duration.ofSeconds(30);

	private static final long FIRST_ROOM = 1_000;

	public TinyEngine {
		if (prefillTp < 1 || decodeTp < 1 || pageSize < 1 || chunkTokens < 1 || newTokens < 0) {
			throw new IllegalArgumentException("engine : prefill TP " + prefillTp + ", decode TP " + decodeTp
					+ ", page size " + pageSize + ", chunk " + chunkTokens + ", new tokens " + newTokens
					+ " (expected: all >= 1, new tokens >= 0)");
		}
	}

	/** @return the tiny model, page size 4, chunks of 8 prompt tokens, 8 decode steps */
	public static TinyEngine of(int prefillTp, int decodeTp) {
		return new TinyEngine(TinyConfig.tiny(), prefillTp, decodeTp, 4, 8, 8);
	}

	/**
	 * @param seed where the tokens come from
	 * @param lengths each prompt's length
	 * @return one prompt of random tokens per length
	 */
	public List<int[]> prompts(long seed, int... lengths) {
		Random random = new Random(seed);
		List<int[]> prompts = new ArrayList<>();
		for (int length : lengths) {
			int[] p = new int[length];
			for (int t = 0; t < p.length; t++) {
				p[t] = random.nextInt(model.vocab());
			}
			prompts.add(p);
		}
		return prompts;
	}

	/**
	 * The reference: every request prefilled and decoded on one TP-1 cache in this process, no transfer.
	 *
	 * @return one result per prompt, in prompt order
	 */
	public List<Generation> runInOneProcess(List<int[]> prompts) {
		TinyTransformer m = new TinyTransformer(model);
		PagedKVCache cache = PagedKVCache.allocate(model, 1, pageSize, poolPages(prompts), prompts.size(), 3);
		List<Generation> out = new ArrayList<>();
		for (int i = 0; i < prompts.size(); i++) {
			int[] prompt = prompts.get(i);
			PageTable table = new PageTable();
			cache.reserve(table, prompt.length);
			int first = TinyTransformer.argmax(m.prefill(prompt, 0, prompt.length, cache, table));
			Decoding d = new Decoding(table, prompt.length, first, newTokens);
			while (!d.done()) {
				d.step(m, cache);
			}
			out.add(new Generation(FIRST_ROOM + i, prompt, d.tokens(), d.logits(), List.of(), null));
		}
		return out;
	}

	/**
	 * Prefill on one instance, decode on another, the KV moved by kvferry over real sockets. Prefill runs on its own
	 * thread, as another server would; decode's scheduler loop runs on the caller's.
	 *
	 * @param prompts the requests, room {@code 1000 + i} for prompt {@code i}
	 * @param listener told on the decode scheduler thread when each request's KV has landed
	 * @return one result per prompt, in prompt order
	 * @throws InterruptedException when interrupted while decode waits for a transfer
	 */
	public List<Generation> runDisaggregated(List<int[]> prompts, DecodeWorker.Listener listener)
			throws InterruptedException {
		TinyTransformer m = new TinyTransformer(model);
		int pages = poolPages(prompts);
		PagedKVCache prefillCache = PagedKVCache.allocate(model, prefillTp, pageSize, pages, prompts.size(), 1);
		PagedKVCache decodeCache = PagedKVCache.allocate(model, decodeTp, pageSize, pages, prompts.size(), 2);
		DisposableBootstrapServer server = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		// Each instance with its own event loops, as in two processes.
		NettyKVTransport prefillTransport = NettyKVTransport.create();
		NettyKVTransport decodeTransport = NettyKVTransport.create();
		ReactorBootstrapClient client = ReactorBootstrapClient.create();
		try (KVFerryLink prefillLink = KVFerryLink.prefill(prefillCache.kvArgs(), "127.0.0.1", server.address(),
				prefillTransport, client, TIMEOUT);
				KVFerryLink decodeLink = KVFerryLink.decode(decodeCache.kvArgs(), server.address(), decodeTransport,
						client, TIMEOUT)) {
			DecodeWorker decode = new DecodeWorker(m, decodeCache, decodeLink, listener);
			PrefillWorker prefill = new PrefillWorker(m, prefillCache, prefillLink, chunkTokens);
			for (int i = 0; i < prompts.size(); i++) {
				decode.admit(FIRST_ROOM + i, prompts.get(i), newTokens);
			}
			Mono<Void> prefilled = Flux.range(0, prompts.size())
					.concatMap(i -> Mono.fromCallable(() -> prefill.prefill(FIRST_ROOM + i, prompts.get(i))))
					.collectList()
					.flatMap(Mono::whenDelayError)
					.subscribeOn(Schedulers.boundedElastic())
					.cache();
			// Failures show in decode's results; waiting here only keeps prefill's pages alive until it is done.
			prefilled.subscribe(null, e -> log.debug("prefill ended with a failure, reported by decode: {}",
					e.toString()));
			List<Generation> results = new ArrayList<>(decode.run(TIMEOUT));
			prefilled.onErrorResume(e -> Mono.empty()).block(TIMEOUT);
			results.sort(Comparator.comparingLong(Generation::room));
			return results;
		}
		finally {
			prefillTransport.disposeNow(TIMEOUT);
			decodeTransport.disposeNow(TIMEOUT);
			client.dispose();
			server.disposeNow();
		}
	}

	// Every request's prompt and generated tokens at once, so that no run waits for pages.
	private int poolPages(List<int[]> prompts) {
		int pages = 0;
		for (int[] p : prompts) {
			pages += (p.length + newTokens + pageSize - 1) / pageSize;
		}
		return pages + 1;
	}
}
