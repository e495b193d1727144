package io.kvferry.bootstrap.server.internal;

import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

/**
 * The JSON bodies of look-up answers, written once per value: a rank's endpoint or the instance's sizes are read
 * thousands of times a second and change only when a rank registers, so writing them anew each time (Jackson, its
 * buffers and its serializer look-ups) was most of what a look-up cost. Keyed by the value, not the object, so a store
 * that builds new objects on every read (etcd) is served from the cache too.
 * <p>
 * Bounded: past {@link #MAX_ENTRIES} values the cache starts over, so values that come and go (ranks re-registered
 * at new ports, instances of a shared store) cannot fill the heap. Thread-safe and lock-free for readers; the arrays
 * it returns are shared and must not be written to.
 *
 * @param <T> the answered value, with value equality
 */
final class AnswerCache<T> {

	/** Most values held; a cluster has a few hundred ranks. */
	static final int MAX_ENTRIES = 4096;

	private final Map<T, byte[]> bodies = new ConcurrentHashMap<>();
	private final Function<T, Object> json;

	/**
	 * @param json what is written for a value: the map {@link Json#write} turns into the body
	 */
	AnswerCache(Function<T, Object> json) {
		this.json = Objects.requireNonNull(json, "json");
	}

	/**
	 * @param value a value to answer
	 * @return its JSON body, written now or earlier
	 */
	byte[] body(T value) {
		byte[] body = bodies.get(value);
		if (body == null) {
			body = Json.write(json.apply(value));
			if (bodies.size() >= MAX_ENTRIES) {
				bodies.clear();
			}
			bodies.put(value, body);
		}
		return body;
	}

	/** @return how many values are held */
	int size() {
		return bodies.size();
	}
}
