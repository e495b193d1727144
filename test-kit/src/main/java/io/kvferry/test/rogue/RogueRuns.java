package io.kvferry.test.rogue;

import io.kvferry.test.LeakGuard;
import net.jqwik.api.lifecycle.AroundPropertyHook;
import net.jqwik.api.lifecycle.PropagationMode;
import net.jqwik.api.lifecycle.PropertyExecutionResult;
import net.jqwik.api.lifecycle.PropertyExecutor;
import net.jqwik.api.lifecycle.PropertyLifecycleContext;

/**
 * How long the rogue properties run, and the leak check JUnit Jupiter's extensions would do: a property's own
 * {@code tries} and {@code seed} (fixed, so that {@code mvn verify} runs the same chains every time) unless the system
 * properties {@value #TRIES} and {@value #SEED} say otherwise; {@code -Dkvferry.rogue.seed=random} draws a new seed,
 * which jqwik prints with a failure. A property fails when Netty reported a leaked buffer while it ran.
 */
public final class RogueRuns implements AroundPropertyHook {

	/** System property: tries of every rogue property, instead of each one's own. */
	public static final String TRIES = "kvferry.rogue.tries";

	/** System property: the seed of every rogue property ({@code random} for a new one each run). */
	public static final String SEED = "kvferry.rogue.seed";

	/** Registered on a test class, it applies to each of its properties. */
	@Override
	public PropagationMode propagateTo() {
		return PropagationMode.ALL_DESCENDANTS;
	}

	@Override
	public PropertyExecutionResult aroundProperty(PropertyLifecycleContext context, PropertyExecutor property) {
		String tries = System.getProperty(TRIES);
		if (tries != null && !tries.isBlank()) {
			context.attributes().setTries(Integer.parseInt(tries.trim()));
		}
		String seed = System.getProperty(SEED);
		if (seed != null && !seed.isBlank()) {
			context.attributes().setSeed(seed.trim().equals("random") ? "" : seed.trim());
		}
		LeakGuard.reset();
		PropertyExecutionResult result = property.execute();
		try {
			LeakGuard.check(context.label());
		}
		catch (AssertionError leak) {
			return result.mapToFailed(leak);
		}
		return result;
	}
}
