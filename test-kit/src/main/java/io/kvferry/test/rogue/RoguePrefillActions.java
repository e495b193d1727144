package io.kvferry.test.rogue;

import java.time.Duration;
import java.util.function.Supplier;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.state.Action;
import net.jqwik.api.state.ActionChain;
import net.jqwik.api.state.ActionChainArbitrary;
import net.jqwik.api.state.Transformer;

/**
 * The steps of a rogue prefill run, as jqwik actions on a {@link RoguePrefillWorld}: decode opens rooms of the rogue
 * and of the well-behaved rank, the good engine sends, decode's engine aborts, time passes; the rogue writes granted
 * bytes (whole pages, pieces, strided chunks, across pages, its aux row), writes them again, writes outside the room
 * (ungranted pages, another room's pages, regions decode lacks, past the end, negative or overflowing offsets, empty or
 * overlapping blocks), fences and reports with right and wrong counts and checksums, finishes honestly, names rooms it
 * was not asked for, sends control messages prefill never sends, closes stripes, goes silent, forges malformed frames,
 * and answers handshakes and aborts in any of its ways. Every parameter is drawn when the chain is made, so that jqwik
 * shrinks a failing chain step by step; a step that finds nothing to act on does nothing.
 */
public final class RoguePrefillActions {

	private RoguePrefillActions() {
	}

	/**
	 * @param worlds makes a fresh world for each chain
	 * @param steps the most steps of a chain
	 * @return chains of rogue steps, ending with {@link RoguePrefillWorld#end()}
	 */
	public static ActionChainArbitrary<RoguePrefillWorld> chains(Supplier<RoguePrefillWorld> worlds, int steps) {
		return ActionChain.startWith(worlds)
				.withAction(5, openRogue())
				.withAction(2, openGood())
				.withAction(2, sendGood())
				.withAction(1, abort())
				.withAction(2, advance())
				.withAction(14, write())
				.withAction(6, report())
				.withAction(4, finish())
				.withAction(2, foreign())
				.withAction(1, stray())
				.withAction(1, closeStripe())
				.withAction(1, silence())
				.withAction(1, forge())
				.withAction(2, handshake())
				.withAction(1, ackAborts())
				.withMaxTransformations(steps);
	}

	private static Arbitrary<Integer> picks() {
		return Arbitraries.integers().between(0, 63);
	}

	private static Arbitrary<Integer> stripes() {
		return Arbitraries.integers().between(0, 7);
	}

	private static Action.Independent<RoguePrefillWorld> openRogue() {
		return () -> Combinators.combine(Arbitraries.integers().between(1, 4), Arbitraries.of(true, false))
				.as((n, aux) -> Transformer.mutate("decode opens a rogue room of " + n + " pages" + (aux ? " and an aux "
						+ "row" : ""), w -> w.openRogue(n, aux)));
	}

	private static Action.Independent<RoguePrefillWorld> openGood() {
		return () -> Combinators.combine(Arbitraries.integers().between(1, 4), Arbitraries.of(true, false))
				.as((n, aux) -> Transformer.mutate("decode opens a good room of " + n + " pages" + (aux ? " and an aux "
						+ "row" : ""), w -> w.openGood(n, aux)));
	}

	private static Action.Independent<RoguePrefillWorld> sendGood() {
		return () -> picks().map(p -> Transformer.mutate("the good engine sends held room #" + p, w -> w.sendGood(p)));
	}

	private static Action.Independent<RoguePrefillWorld> abort() {
		return () -> picks().map(p -> Transformer.mutate("decode aborts live room #" + p, w -> w.abort(p)));
	}

	private static Action.Independent<RoguePrefillWorld> advance() {
		return () -> Arbitraries.of(10L, 300L, 1_000L, 2_500L, 6_000L).map(ms -> Transformer.mutate("time passes: "
				+ ms + " ms", w -> w.advance(Duration.ofMillis(ms))));
	}

	private static Action.Independent<RoguePrefillWorld> write() {
		return () -> Combinators.combine(picks(), Arbitraries.of(RoguePrefillWorld.Write.class), stripes(),
				Arbitraries.integers().between(0, 7), Arbitraries.integers().between(0, 7),
				Arbitraries.integers().between(0, 4095), Arbitraries.integers().between(0, 4095))
				.as((p, kind, stripe, buffer, position, a, b) -> Transformer.mutate("the rogue writes " + kind
						+ " of room #" + p + " (stripe " + stripe + ", buffer " + buffer + ", position " + position
						+ ", " + a + ", " + b + ")", w -> w.write(p, kind, stripe, buffer, position, a, b)));
	}

	private static Action.Independent<RoguePrefillWorld> report() {
		return () -> Combinators.combine(picks(), Arbitraries.of(RoguePrefillWorld.Report.class), stripes(),
				Arbitraries.integers().between(0, 1 << 20))
				.as((p, kind, stripe, arg) -> Transformer.mutate("the rogue reports " + kind + " of room #" + p
						+ " (stripe " + stripe + ", " + arg + ")", w -> w.report(p, kind, stripe, arg)));
	}

	private static Action.Independent<RoguePrefillWorld> finish() {
		return () -> Combinators.combine(picks(), stripes()).as((p, stripe) -> Transformer.mutate("the rogue "
				+ "finishes room #" + p + " honestly on stripe " + stripe, w -> w.finish(p, stripe)));
	}

	private static Action.Independent<RoguePrefillWorld> foreign() {
		return () -> Combinators.combine(Arbitraries.of(RoguePrefillWorld.Foreign.class), picks(),
				Arbitraries.of(true, false), stripes())
				.as((kind, p, known, stripe) -> Transformer.mutate("the rogue sends " + kind + " for "
						+ (known ? "the good rank's room #" : "unknown room #") + p + " on stripe " + stripe,
						w -> w.foreign(kind, p, known, stripe)));
	}

	private static Action.Independent<RoguePrefillWorld> stray() {
		return () -> Combinators.combine(Arbitraries.of(RoguePrefillWorld.Stray.class), picks(), stripes())
				.as((kind, p, stripe) -> Transformer.mutate("the rogue sends a stray " + kind + " (#" + p
						+ ", stripe " + stripe + ")", w -> w.stray(kind, p, stripe)));
	}

	private static Action.Independent<RoguePrefillWorld> closeStripe() {
		return () -> stripes().map(s -> Transformer.mutate("the rogue closes stripe " + s, w -> w.closeStripe(s)));
	}

	private static Action.Independent<RoguePrefillWorld> silence() {
		return () -> stripes().map(s -> Transformer.mutate("the rogue goes silent on stripe " + s,
				w -> w.silence(s)));
	}

	private static Action.Independent<RoguePrefillWorld> forge() {
		return () -> Combinators.combine(Arbitraries.of(Forgery.class), picks(), stripes())
				.as((f, p, s) -> Transformer.mutate("the rogue forges " + f + " (room #" + p + ", stripe " + s + ")",
						w -> w.forge(f, p, s)));
	}

	private static Action.Independent<RoguePrefillWorld> handshake() {
		return () -> Arbitraries.of(RoguePrefillPeer.Handshake.class).map(h -> Transformer.mutate("the rogue answers "
				+ "handshakes " + h, w -> w.handshake(h)));
	}

	private static Action.Independent<RoguePrefillWorld> ackAborts() {
		return () -> Arbitraries.of(true, false).map(ack -> Transformer.mutate("the rogue " + (ack ? "acknowledges"
				: "ignores") + " aborts", w -> w.ackAborts(ack)));
	}
}
