package io.kvferry.test.rogue;

import java.time.Duration;
import java.util.function.Supplier;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.Tuple;
import net.jqwik.api.state.Action;
import net.jqwik.api.state.ActionChain;
import net.jqwik.api.state.ActionChainArbitrary;
import net.jqwik.api.state.Transformer;

/**
 * The steps of a rogue decode run, as jqwik actions on a {@link RogueDecodeWorld}: the rogue opens sessions with honest
 * and dishonest hellos, joins stripes right and wrong, asks for rooms (honestly, twice, the other decode's, on another
 * session, with pages past its memory, negative or repeated, too many of them, aux rows past its memory, state slots it
 * has not, two destinations, as a dummy, with prefixes, on a data stripe, before its stripes joined), aborts and renews
 * its own rooms, the other decode's and unknown ones, sends messages only prefill sends and data frames, and closes
 * connections; the good decode opens rooms, prefill's engine serves and gives them up, time passes. Every parameter is
 * drawn when the chain is made; a step that finds nothing to act on does nothing.
 */
public final class RogueDecodeActions {

	private RogueDecodeActions() {
	}

	/**
	 * @param worlds makes a fresh world for each chain
	 * @param steps the most steps of a chain
	 * @return chains of rogue decode steps, ending with {@link RogueDecodeWorld#end()}
	 */
	public static ActionChainArbitrary<RogueDecodeWorld> chains(Supplier<RogueDecodeWorld> worlds, int steps) {
		return ActionChain.startWith(worlds)
				.withAction(3, connect())
				.withAction(2, join())
				.withAction(10, ask())
				.withAction(3, abort())
				.withAction(2, renew())
				.withAction(1, stray())
				.withAction(1, data())
				.withAction(1, close())
				.withAction(3, openGood())
				.withAction(8, serve())
				.withAction(1, abortServed())
				.withAction(2, advance())
				.withMaxTransformations(steps);
	}

	private static Arbitrary<Integer> picks() {
		return Arbitraries.integers().between(0, 63);
	}

	private static Action.Independent<RogueDecodeWorld> connect() {
		return () -> Combinators.combine(Arbitraries.integers().between(1, 3),
				Arbitraries.frequencyOf(Tuple.of(4, Arbitraries.just(RogueDecodeWorld.Hello.HONEST)), Tuple.of(1, Arbitraries.of(RogueDecodeWorld.Hello.class))),
				Arbitraries.of(true, false))
				.as((width, kind, checksums) -> Transformer.mutate("the rogue opens a session of " + width
						+ " stripes, hello " + kind + (checksums ? ", with checksums" : ""),
						w -> w.connect(width, kind, checksums)));
	}

	private static Action.Independent<RogueDecodeWorld> join() {
		return () -> Combinators.combine(picks(), Arbitraries.of(RogueDecodeWorld.Join.class))
				.as((p, kind) -> Transformer.mutate("the rogue joins a stripe of session #" + p + " (" + kind + ")",
						w -> w.join(p, kind)));
	}

	private static Action.Independent<RogueDecodeWorld> ask() {
		return () -> Combinators.combine(picks(), Arbitraries.of(RogueDecodeWorld.Ask.class),
				Arbitraries.integers().between(0, 7), Arbitraries.integers().between(0, 1 << 16))
				.as((p, kind, n, a) -> Transformer.mutate("the rogue asks " + kind + " on session #" + p + " (" + n
						+ ", " + a + ")", w -> w.ask(p, kind, n, a)));
	}

	private static Action.Independent<RogueDecodeWorld> abort() {
		return () -> Combinators.combine(picks(), Arbitraries.of(RogueDecodeWorld.Target.class),
				Arbitraries.integers().between(0, 1 << 20))
				.as((p, target, code) -> Transformer.mutate("the rogue aborts a room (" + target + ", " + code
						+ ") on session #" + p, w -> w.abort(p, target, code)));
	}

	private static Action.Independent<RogueDecodeWorld> renew() {
		return () -> Combinators.combine(picks(), Arbitraries.of(RogueDecodeWorld.Target.class),
				Arbitraries.integers().between(0, 1000))
				.as((p, target, many) -> Transformer.mutate("the rogue renews rooms (" + target + ", " + many
						+ ") on session #" + p, w -> w.renew(p, target, many)));
	}

	private static Action.Independent<RogueDecodeWorld> stray() {
		return () -> Combinators.combine(picks(), Arbitraries.of(RogueDecodeWorld.Stray.class),
				Arbitraries.integers().between(0, 7))
				.as((p, kind, stripe) -> Transformer.mutate("the rogue sends a stray " + kind + " on session #" + p
						+ " stripe " + stripe, w -> w.stray(p, kind, stripe)));
	}

	private static Action.Independent<RogueDecodeWorld> data() {
		return () -> Combinators.combine(picks(), Arbitraries.integers().between(0, 7))
				.as((p, stripe) -> Transformer.mutate("the rogue sends a data frame on session #" + p + " stripe "
						+ stripe, w -> w.data(p, stripe)));
	}

	private static Action.Independent<RogueDecodeWorld> close() {
		return () -> Combinators.combine(picks(), Arbitraries.integers().between(0, 7))
				.as((p, stripe) -> Transformer.mutate("the rogue closes session #" + p + " stripe " + stripe,
						w -> w.close(p, stripe)));
	}

	private static Action.Independent<RogueDecodeWorld> openGood() {
		return () -> Combinators.combine(Arbitraries.integers().between(1, 4), Arbitraries.of(true, false))
				.as((n, aux) -> Transformer.mutate("the good decode opens a room of " + n + " pages" + (aux
						? " and an aux row" : ""), w -> w.openGood(n, aux)));
	}

	private static Action.Independent<RogueDecodeWorld> serve() {
		return () -> picks().map(p -> Transformer.mutate("prefill's engine serves published room #" + p,
				w -> w.serve(p)));
	}

	private static Action.Independent<RogueDecodeWorld> abortServed() {
		return () -> picks().map(p -> Transformer.mutate("prefill's engine aborts served room #" + p,
				w -> w.abortServed(p)));
	}

	private static Action.Independent<RogueDecodeWorld> advance() {
		return () -> Arbitraries.of(10L, 500L, 1_500L, 4_000L, 11_000L).map(ms -> Transformer.mutate("time passes: "
				+ ms + " ms", w -> w.advance(Duration.ofMillis(ms))));
	}
}
