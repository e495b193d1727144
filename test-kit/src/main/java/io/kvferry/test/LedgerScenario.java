package io.kvferry.test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

import io.kvferry.DecodeKVManager;
import io.kvferry.HostPort;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.ParallelLayout;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.KVTransport;
import io.kvferry.spi.RegionKind;
import reactor.core.publisher.Mono;

/**
 * Decode's verdict against a plain model of a room's bytes, over any transport. A prefill peer answers each room's
 * request with a random sequence of writes (every granted byte once, then pieces dropped, duplicated, shifted onto
 * other pages, split, aimed outside the room, reordered) and always reports Success with the byte count it sent, so
 * only decode's own ledger can tell. The model: the room succeeds iff every granted byte (each destination page of
 * each KV buffer, and the aux row) was written exactly once and nothing else was written.
 */
public final class LedgerScenario implements AutoCloseable {

	private static final Duration T = Duration.ofSeconds(10);
	private static final ModelShape SHAPE = new ModelShape(2, 2, 16, 2, 4, false, 0, 64, 0);
	private static final HostPort BOOTSTRAP = new HostPort("10.0.0.9", 1);
	private static final int PAGES = 16;

	private final RankMemory prefillMem = RankMemory.prefill(SHAPE, ParallelLayout.SINGLE, PAGES, 4, 0);
	private final RankMemory decodeMem = RankMemory.decode(SHAPE, ParallelLayout.SINGLE, PAGES, 4, 0);
	private final int itemLen = prefillMem.kvArgs().kvRegions().get(0).itemLen();
	private final int auxLen = prefillMem.kvArgs().auxRegions().get(0).itemLen();
	private final int buffers = prefillMem.kvArgs().kvRegions().size();
	private final ConcurrentHashMap<Long, List<DataHeader>> plans = new ConcurrentHashMap<>();
	private final RoguePrefill peer;
	private final DecodeKVManager decode;

	/** @param transports makes the two ends' transports (the peer's first, then decode's) */
	public LedgerScenario(Supplier<KVTransport> transports) {
		KVTransport peerTransport = transports.get();
		InMemoryBootstrap bootstrap = new InMemoryBootstrap();
		this.peer = RoguePrefill.start(peerTransport, bootstrap, BOOTSTRAP, prefillMem.kvArgs(), (c, req) -> {
			long sent = 0;
			for (DataHeader h : Objects.requireNonNull(plans.remove(req.room()), "plan of the room asked")) {
				long src = (h.kind() == RegionKind.KV ? prefillMem.kvArgs().kvRegions()
						: prefillMem.kvArgs().auxRegions()).get(h.region()).address();
				c.send(new DataBlock(h, src, 0));
				sent += h.payloadLength();
			}
			c.send(new KVMessage.Status(req.room(), KVPoll.SUCCESS, 0, "", sent, KVMessage.NO_CHECKSUM));
		});
		this.decode = KVManagerSpec.decode().kvArgs(decodeMem.kvArgs()).transport(transports.get())
				.bootstrapClient(bootstrap).stripes(1).startNow();
	}

	/** What happened to the rooms run. */
	public record Outcome(int rooms, int successes, int failures, List<String> disagreements) {
	}

	/**
	 * Runs rooms one after another, each with its own random writes.
	 *
	 * @param rooms how many
	 * @param seed of the random sequences
	 * @return the counts, and every room where decode and the model disagree
	 */
	public Outcome run(int rooms, long seed) {
		Random random = new Random(seed);
		int ok = 0;
		List<String> disagreements = new ArrayList<>();
		for (int n = 0; n < rooms; n++) {
			long room = n + 1;
			int[] pages = pick(random, 1 + random.nextInt(3));
			int aux = random.nextBoolean() ? random.nextInt(4) : -1;
			List<DataHeader> writes = writes(random, room, pages, aux);
			boolean expected = model(writes, pages, aux);
			plans.put(room, writes);
			KVReceiver r = decode.receiver(BOOTSTRAP, room);
			r.sendMetadata(pages, aux, new int[0]);
			String failure = Objects.requireNonNull(r.completion().then(Mono.just(""))
					.onErrorResume(e -> Mono.just(String.valueOf(e))).block(T), "room's end");
			boolean succeeded = failure.isEmpty();
			if (succeeded) {
				ok++;
			}
			if (succeeded != expected) {
				disagreements.add("room " + room + ": decode " + (succeeded ? "succeeded" : "failed") + ", model says "
						+ (expected ? "success" : "failure") + "; writes " + writes + "; pages "
						+ Arrays.toString(pages) + ", aux " + aux + "; " + failure);
			}
		}
		return new Outcome(rooms, ok, rooms - ok, disagreements);
	}

	private static int[] pick(Random random, int n) {
		List<Integer> all = new ArrayList<>();
		for (int i = 0; i < PAGES; i++) {
			all.add(i);
		}
		Collections.shuffle(all, random);
		return all.subList(0, n).stream().mapToInt(Integer::intValue).toArray();
	}

	private List<DataHeader> writes(Random random, long room, int[] pages, int aux) {
		List<DataHeader> writes = new ArrayList<>();
		for (int b = 0; b < buffers; b++) {
			for (int p : pages) {
				long at = (long) p * itemLen;
				if (random.nextInt(3) == 0) {
					int cut = 1 + random.nextInt(itemLen - 1);
					writes.add(new DataHeader(room, RegionKind.KV, b, at, cut, 0, 1));
					writes.add(new DataHeader(room, RegionKind.KV, b, at + cut, itemLen - cut, 0, 1));
				}
				else {
					writes.add(new DataHeader(room, RegionKind.KV, b, at, itemLen, 0, 1));
				}
			}
		}
		if (aux >= 0 && random.nextInt(8) != 0) {
			writes.add(new DataHeader(room, RegionKind.AUX, 0, (long) aux * auxLen, auxLen, 0, 1));
		}
		if (random.nextBoolean()) {
			int at = random.nextInt(writes.size() + 1);
			DataHeader h = at < writes.size() ? writes.get(at) : null;
			switch (random.nextInt(4)) {
				case 0 -> {
					if (h != null) {
						writes.remove(at);
					}
				}
				case 1 -> {
					if (h != null) {
						writes.add(h);
					}
				}
				case 2 -> {
					// Onto another page, granted or not, at the same offset within it.
					if (h != null && h.kind() == RegionKind.KV) {
						long within = h.dstOffset() % itemLen;
						writes.set(at, new DataHeader(room, RegionKind.KV, h.region(),
								(long) random.nextInt(PAGES) * itemLen + within, h.chunkLen(), 0, 1));
					}
				}
				default -> writes.add(new DataHeader(room, RegionKind.KV, random.nextInt(buffers),
						(long) random.nextInt(PAGES) * itemLen + random.nextInt(itemLen / 2), itemLen / 2, 0, 1));
			}
		}
		Collections.shuffle(writes, random);
		return writes;
	}

	/** @return whether every granted byte is written exactly once and nothing else is */
	private boolean model(List<DataHeader> writes, int[] pages, int aux) {
		int[][] kv = new int[buffers][PAGES * itemLen];
		int[] auxBytes = new int[4 * auxLen];
		for (DataHeader h : writes) {
			int[] c = h.kind() == RegionKind.KV ? kv[h.region()] : auxBytes;
			for (long b = h.dstOffset(); b < h.dstOffset() + h.chunkLen(); b++) {
				c[(int) b]++;
			}
		}
		boolean[] grantedPage = new boolean[PAGES];
		for (int p : pages) {
			grantedPage[p] = true;
		}
		for (int[] c : kv) {
			for (int b = 0; b < c.length; b++) {
				if (c[b] != (grantedPage[b / itemLen] ? 1 : 0)) {
					return false;
				}
			}
		}
		for (int b = 0; b < auxBytes.length; b++) {
			if (auxBytes[b] != (b / auxLen == aux ? 1 : 0)) {
				return false;
			}
		}
		return true;
	}

	@Override
	public void close() {
		decode.disposeNow(T);
		peer.close();
	}
}
