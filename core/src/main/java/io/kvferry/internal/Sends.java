package io.kvferry.internal;

import java.util.function.Consumer;

import io.kvferry.spi.SendListener;

/** Listeners of the engine's sends, from lambdas. */
public final class Sends {

	private Sends() {
	}

	/** @return a listener that calls {@code written} or {@code failed} */
	public static SendListener of(Runnable written, Consumer<Throwable> failed) {
		return new SendListener() {
			@Override
			public void written() {
				written.run();
			}

			@Override
			public void failed(Throwable cause) {
				failed.accept(cause);
			}
		};
	}

	/** @return a listener that only hears of failures */
	public static SendListener ifFailed(Consumer<Throwable> failed) {
		return of(() -> { }, failed);
	}

	/** @return a listener that hears either outcome the same way */
	public static SendListener either(Runnable done) {
		return of(done, e -> done.run());
	}
}
