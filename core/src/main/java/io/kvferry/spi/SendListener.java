package io.kvferry.spi;

import java.util.Objects;
import java.util.function.Consumer;

import reactor.core.publisher.MonoSink;

/**
 * Learns what became of one message handed to {@link KVConnection#send(KVMessage, SendGate, SendListener)}: exactly
 * one of the two methods is called, once, on the transport's thread (quick, never blocking).
 */
public interface SendListener {

	/** Nobody listens: a message whose loss shows through its connection's close. */
	SendListener NONE = new SendListener() {
		@Override
		public void written() {
		}

		@Override
		public void failed(Throwable cause) {
		}
	};

	/** The message was written to the network. */
	void written();

	/**
	 * The message was not written: the connection closed first, its gate closed, or it could not be encoded.
	 *
	 * @param cause names why
	 */
	void failed(Throwable cause);

	/** @return a listener that completes {@code sink} when written and errors it otherwise */
	static SendListener of(MonoSink<Void> sink) {
		Objects.requireNonNull(sink, "sink");
		return new SendListener() {
			@Override
			public void written() {
				sink.success();
			}

			@Override
			public void failed(Throwable cause) {
				sink.error(cause);
			}
		};
	}

	/** @return a listener that calls {@code written} or {@code failed} */
	static SendListener of(Runnable written, Consumer<Throwable> failed) {
		Objects.requireNonNull(written, "written");
		Objects.requireNonNull(failed, "failed");
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
	static SendListener ifFailed(Consumer<Throwable> failed) {
		return of(() -> { }, failed);
	}

	/** @return a listener that hears either outcome the same way */
	static SendListener either(Runnable done) {
		Objects.requireNonNull(done, "done");
		return of(done, e -> done.run());
	}
}
