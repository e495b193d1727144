package io.kvferry.test;

import java.time.Duration;
import java.util.Objects;
import java.util.function.Supplier;

import io.kvferry.DecodeKVManager;
import io.kvferry.HostPort;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.KVTransferException;
import io.kvferry.ParallelLayout;
import io.kvferry.PrefillKVManager;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.KVTransport;
import io.kvferry.spi.RegionKind;
import io.kvferry.spi.ScatterBlock;
import io.kvferry.spi.ScatterHeader;
import io.kvferry.spi.SendGate;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;

/**
 * A frame naming a room from a prefill rank the room never asked, over any transport. Decode asks rooms 5 and 7 of
 * prefill rank A (this library) and room 6 of prefill rank B; B, once asked, sends one frame naming room 5 or 7 (a
 * data header inside room 5's own pages, a fence, a report, an abort acknowledgement). Rooms 5 and 7 are A's alone: whatever B sends, they must succeed with every byte A wrote; a frame that would have
 * acted on them is B's fault, and B's own room 6 fails for it.
 */
public final class UnaskedFrames implements AutoCloseable {

	/** What B sends. */
	public enum Frame {
		/** A data header for room 5, inside room 5's granted pages, with its payload. */
		DATA,
		/** Two pieces for room 5 in one scatter frame, inside room 5's granted pages, with their payload. */
		SCATTER,
		/** A fence for room 7. */
		FENCE,
		/** A Success for room 5. */
		STATUS,
		/** An abort acknowledgement for room 7. */
		ABORT_ACK
	}

	/**
	 * @param room5 how room 5 ended: "SUCCESS" with its bytes verified, else what went wrong
	 * @param room7 the same for room 7
	 * @param room6 room 6's failure: its cause and reason
	 */
	public record Outcome(String room5, String room7, String room6) {
	}

	private static final Duration T = Duration.ofSeconds(10);
	// Long enough for one frame to be read; room 6 ends well within it unless B's frame is ignored.
	private static final Duration ROOM6 = Duration.ofSeconds(5);
	private static final ModelShape SHAPE = new ModelShape(2, 2, 16, 2, 4, false, 0, 64, 0);
	private static final HostPort A = new HostPort("10.0.0.5", 1);
	private static final HostPort B = new HostPort("10.0.0.6", 1);
	private static final int[] SRC5 = { 0, 1 };
	private static final int[] SRC7 = { 2, 3 };
	private static final int[] DST5 = { 10, 11 };
	private static final int[] DST7 = { 20, 21 };

	private final RankMemory prefillMem = RankMemory.prefill(SHAPE, ParallelLayout.SINGLE, 32, 4, 0);
	private final RankMemory rogueMem = RankMemory.prefill(SHAPE, ParallelLayout.SINGLE, 32, 4, 0);
	private final RankMemory decodeMem = RankMemory.decode(SHAPE, ParallelLayout.SINGLE, 32, 4, 0);
	private final InMemoryBootstrap bootstrap = new InMemoryBootstrap();
	private final PrefillKVManager prefill;
	private final DecodeKVManager decode;
	private final RoguePrefill rogue;
	private volatile @Nullable Frame frame;

	/** @param transports makes the three ranks' transports: prefill A's, prefill B's, decode's */
	public UnaskedFrames(Supplier<KVTransport> transports) {
		this.prefill = KVManagerSpec.prefill().kvArgs(prefillMem.kvArgs()).transport(transports.get())
				.bootstrapClient(bootstrap).bootstrapAddress(A).bindAddress(new HostPort("127.0.0.1", 0)).startNow();
		this.rogue = RoguePrefill.start(transports.get(), bootstrap, B, rogueMem.kvArgs(), this::rogueRequest);
		this.decode = KVManagerSpec.decode().kvArgs(decodeMem.kvArgs()).transport(transports.get())
				.bootstrapClient(bootstrap).stripes(1).startNow();
	}

	/**
	 * B, asked for room 6: one frame naming room 5 or 7. After an abort acknowledgement, which decode lets pass, it
	 * reports room 6 failed, so that the acknowledgement was read once room 6 ended.
	 */
	private void rogueRequest(KVConnection c, KVMessage.TransferRequest req) {
		int itemLen = rogueMem.kvArgs().kvRegions().get(0).itemLen();
		switch (Objects.requireNonNull(frame, "frame")) {
			case DATA -> c.send(new DataBlock(new DataHeader(5, RegionKind.KV, 0, (long) DST5[0] * itemLen,
					itemLen, 0, 1), rogueMem.kvArgs().kvRegions().get(0).address(), 0));
			case SCATTER -> {
				long src = rogueMem.kvArgs().kvRegions().get(0).address();
				c.send(new ScatterBlock(new ScatterHeader(5, RegionKind.KV, 2, new int[] { 0, 0 },
						new long[] { (long) DST5[0] * itemLen, (long) DST5[1] * itemLen }, new int[] { itemLen, itemLen }),
						new long[] { src, src + itemLen }, SendGate.OPEN));
			}
			case FENCE -> c.send(new KVMessage.Fence(7, itemLen, KVMessage.NO_CHECKSUM));
			case STATUS -> c.send(new KVMessage.Status(5, KVPoll.SUCCESS, 0, "", 0, KVMessage.NO_CHECKSUM));
			case ABORT_ACK -> {
				c.send(new KVMessage.AbortAck(7));
				c.send(new KVMessage.Status(req.room(), KVPoll.FAILED, 0, "rogue rank B gives up room " + req.room()));
			}
		}
	}

	/**
	 * Runs the three rooms once.
	 *
	 * @param sent what B sends
	 * @return how each room ended
	 */
	public Outcome run(Frame sent) {
		this.frame = sent;
		KVReceiver r5 = receiver(A, 5, DST5);
		KVReceiver r7 = receiver(A, 7, DST7);
		KVSender s5 = sender(5, SRC5);
		KVSender s7 = sender(7, SRC7);
		// A holds both requests: decode has opened their ledgers and named A their writer.
		for (KVSender s : new KVSender[] { s5, s7 }) {
			s.states().filter(p -> p == KVPoll.WAITING_FOR_INPUT).blockFirst(T);
		}
		KVReceiver r6 = receiver(B, 6, new int[] { 30 });
		// Room 6 ends once decode read B's frame: B's fault closes B, and B's report follows a frame let pass.
		String room6 = Objects.requireNonNull(r6.completion().then(Mono.just("SUCCESS"))
				.onErrorResume(KVTransferException.class, e -> Mono.just(e.failureCause() + ": " + e.reason()))
				.timeout(ROOM6, Mono.just("room 6 still live after " + ROOM6.toSeconds() + " s")).block(T),
				"room 6's end");
		s5.send(SRC5, new int[0]);
		s7.send(SRC7, new int[0]);
		return new Outcome(result(r5, 5, DST5), result(r7, 7, DST7), room6);
	}

	private KVReceiver receiver(HostPort at, long room, int[] dst) {
		KVReceiver r = decode.receiver(at, room);
		r.sendMetadata(dst, -1, new int[0]);
		return r;
	}

	private KVSender sender(long room, int[] src) {
		prefillMem.fill(room, src, -1, new int[0]);
		KVSender s = prefill.sender(room);
		s.init(src.length, -1);
		return s;
	}

	private String result(KVReceiver r, long room, int[] dst) {
		String end = Objects.requireNonNull(r.completion().then(Mono.just("SUCCESS"))
				.onErrorResume(KVTransferException.class, e -> Mono.just(e.failureCause() + ": " + e.reason()))
				.block(T), "room's end");
		if (!"SUCCESS".equals(end)) {
			return end;
		}
		String wrong = decodeMem.verify(room, dst, -1, new int[0]);
		return wrong == null ? end : "SUCCESS with wrong bytes: " + wrong;
	}

	@Override
	public void close() {
		decode.disposeNow(T);
		prefill.disposeNow(T);
		rogue.close();
	}
}
