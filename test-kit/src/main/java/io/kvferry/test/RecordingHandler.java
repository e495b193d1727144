package io.kvferry.test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

import io.kvferry.spi.CloseReason;
import io.kvferry.spi.ConnectionHandler;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.PayloadSink;
import org.jspecify.annotations.Nullable;

/**
 * A {@link ConnectionHandler} that records what arrives, for tests. Lock-free on the calling side (event loops must not
 * park, BlockHound watches); the test thread waits with bounded timeouts.
 */
public class RecordingHandler implements ConnectionHandler {

	/** Every message and data header, in arrival order. */
	public final Queue<Object> events = new ConcurrentLinkedQueue<>();
	public final Queue<String> closeReasons = new ConcurrentLinkedQueue<>();
	/** Every close reported, with its kind: one for a correct transport. */
	public final Queue<CloseReason> closes = new ConcurrentLinkedQueue<>();
	public final CountDownLatch closed = new CountDownLatch(1);

	private final Queue<KVMessage> messages = new ConcurrentLinkedQueue<>();
	private final Semaphore messageCount = new Semaphore(0);

	public volatile Function<DataHeader, @Nullable PayloadSink> sinks = h -> null;
	public volatile @Nullable KVConnection connection;

	@Override
	public void onMessage(KVConnection connection, KVMessage message) {
		this.connection = connection;
		events.add(message);
		messages.add(message);
		messageCount.release();
	}

	@Override
	public @Nullable PayloadSink onData(KVConnection connection, DataHeader header) {
		this.connection = connection;
		events.add(header);
		return sinks.apply(header);
	}

	@Override
	public void onClose(KVConnection connection, CloseReason reason) {
		closes.add(reason);
		closeReasons.add(reason.message());
		closed.countDown();
	}

	/** @return the next message, waiting at most {@code timeout} */
	public KVMessage nextMessage(Duration timeout) throws InterruptedException {
		if (!messageCount.tryAcquire(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
			throw new AssertionError("no message within " + timeout + "; events so far: " + events);
		}
		return messages.poll();
	}

	/** @return the next {@code n} messages */
	public List<KVMessage> nextMessages(int n, Duration timeout) throws InterruptedException {
		List<KVMessage> list = new ArrayList<>(n);
		for (int i = 0; i < n; i++) {
			list.add(nextMessage(timeout));
		}
		return list;
	}

	/** @return the close reason, waiting at most {@code timeout} */
	public String awaitClose(Duration timeout) throws InterruptedException {
		if (!closed.await(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
			throw new AssertionError("not closed within " + timeout);
		}
		return closeReasons.peek();
	}
}
