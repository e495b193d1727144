package io.kvferry.registry.etcd;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.common.exception.CompactedException;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import io.etcd.jetcd.watch.WatchResponse;
import io.kvferry.bootstrap.RankRoute;
import io.kvferry.bootstrap.RegistryChange;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Flux;
import reactor.core.publisher.FluxSink;
import reactor.core.publisher.Mono;
import reactor.util.retry.Retry;

/**
 * The watch behind {@link EtcdBootstrapClient#changes()}: every instance under the key prefix, read once when the first
 * subscriber comes and watched from the revision of that read; resumed after the last revision it saw when etcd or the
 * connection fails. It keeps every key it read or saw written, so that it can tell what changed when the history
 * between two revisions is gone:
 * <ul>
 * <li>etcd compacted the revisions the watch would resume after: it reads every key again at once and reports the
 * difference;</li>
 * <li>etcd lost its data (restarted with an empty data directory, or restored from an old backup): its revision went
 * back below the last one seen, or a key the watch holds was created anew without its deletion being seen. The ranks
 * still alive register again as soon as they notice their lease is gone (within a third of their TTL), so the watch
 * reads every key again after one lease TTL of its own and reports the difference: a rank that did not come back is
 * removed.</li>
 * </ul>
 * Either way no change is skipped: what changed in between is reported as the difference between the two reads
 * (a rank registered and gone again in between leaves nothing to report).
 */
final class RegistryWatch {

	private static final Logger LOG = LoggerFactory.getLogger(RegistryWatch.class);

	/** When the keys must be read before the watch (re)opens. */
	private enum Read {
		/** The watch resumes after the last revision it saw. */
		NONE,
		/** At once: the first subscription, or the revisions after the last one seen were compacted. */
		NOW,
		/** After the grace: etcd lost its data, and the live ranks need time to register again. */
		AFTER_GRACE
	}

	private final EtcdConnection connection;
	private final RegistryKeys keys;
	private final Duration grace;
	// Told each time a watch is established: etcd confirmed it, and every later change reaches the subscriber.
	private final Runnable onWatching;
	// Guards what follows: a read and the events of a watch being closed may overlap at a switch.
	private final Object lock = new Object();
	// Every rank and info key under the prefix with its value, as of `revision`: what a new read is compared with.
	private final Map<String, ByteSequence> known = new HashMap<>();
	private long revision;
	private Read read = Read.NOW;

	private RegistryWatch(EtcdConnection connection, RegistryKeys keys, Duration grace, Runnable onWatching) {
		this.connection = connection;
		this.keys = keys;
		this.grace = grace;
		this.onWatching = onWatching;
	}

	/**
	 * @param connection the client's etcd connection
	 * @param keys the key layout
	 * @param grace how long after etcd lost its data the keys are read again: the time live ranks have to register
	 *        again (the client's lease TTL)
	 * @return the changes; cold (each subscription reads and watches on its own)
	 */
	static Flux<RegistryChange> changes(EtcdConnection connection, RegistryKeys keys, Duration grace) {
		return changes(connection, keys, grace, () -> {
		});
	}

	/**
	 * @param onWatching told, on etcd's thread, each time a watch is established (at first and after every resume):
	 *        a change made after it is reported. Subscribing alone promises nothing of the kind, since the first read
	 *        and the watch start asynchronously
	 */
	static Flux<RegistryChange> changes(EtcdConnection connection, RegistryKeys keys, Duration grace,
			Runnable onWatching) {
		return Flux.defer(() -> new RegistryWatch(connection, keys, grace, onWatching).changes());
	}

	private Flux<RegistryChange> changes() {
		return connection.connection()
				.flatMapMany(client -> reread().concatWith(Flux.<RegistryChange>create(sink -> watch(client, sink))))
				.doOnError(CompactedException.class, e -> {
					long after;
					synchronized (lock) {
						read = Read.NOW;
						after = revision;
					}
					LOG.warn("etcd compacted the revisions after {} before the watch resumed: reading every key under {} "
							+ "again to report what changed meanwhile", after, keys.instances());
				})
				.retryWhen(Retry.backoff(Long.MAX_VALUE, Duration.ofMillis(100)).maxBackoff(Duration.ofSeconds(2))
						.filter(e -> !connection.isDisposed())
						.doBeforeRetry(s -> {
							if (!(s.failure() instanceof HistoryLost) && !(s.failure() instanceof CompactedException)) {
								LOG.warn("etcd watch failed, resuming after revision {}: {}", revisionNow(),
										EtcdErrors.map("watch " + keys.instances(), connection.access(),
												connection.timeout(), s.failure()).getMessage());
							}
						}));
	}

	private long revisionNow() {
		synchronized (lock) {
			return revision;
		}
	}

	/** Reads every key under the prefix when the watch cannot simply resume, and reports what changed since. */
	private Flux<RegistryChange> reread() {
		Read how;
		synchronized (lock) {
			how = read;
		}
		if (how == Read.NONE) {
			return Flux.empty();
		}
		Mono<Void> wait = how == Read.AFTER_GRACE ? Mono.delay(grace).then(Mono.fromRunnable(() -> {
			synchronized (lock) {
				// Waited once: a read that fails is tried again at once.
				read = Read.NOW;
			}
		})) : Mono.empty();
		ByteSequence prefix = RegistryKeys.bytes(keys.instances());
		return wait.then(connection.bounded("read " + keys.instances(), client -> Mono.fromFuture(() -> client
				.getKVClient().get(prefix, GetOption.builder().isPrefix(true).build()))))
				.flatMapIterable(get -> replace(get, how));
	}

	/** @return what differs between the keys held and the ones read, which replace them */
	private List<RegistryChange> replace(GetResponse get, Read how) {
		Map<String, ByteSequence> now = new HashMap<>();
		for (KeyValue kv : get.getKvs()) {
			String key = kv.getKey().toString(StandardCharsets.UTF_8);
			if (keys.parse(key) != null) {
				now.put(key, kv.getValue());
			}
		}
		List<RegistryChange> changes = new ArrayList<>();
		long before;
		synchronized (lock) {
			before = revision;
			Set<String> all = new HashSet<>(known.keySet());
			all.addAll(now.keySet());
			for (String key : all) {
				RegistryChange c = change(key, known.get(key), now.get(key));
				if (c != null) {
					changes.add(c);
				}
			}
			known.clear();
			known.putAll(now);
			revision = get.getHeader().getRevision();
			read = Read.NONE;
		}
		if (before > 0) {
			LOG.warn("etcd registry re-read: {} keys under {} at revision {} (the watch had seen revision {}); {}",
					now.size(), keys.instances(), get.getHeader().getRevision(), before,
					changes.isEmpty() ? "nothing changed meanwhile" : "changes meanwhile: " + changes);
		}
		else {
			LOG.debug("etcd registry read: {} keys under {} at revision {}", now.size(), keys.instances(),
					get.getHeader().getRevision());
		}
		return changes;
	}

	private void watch(Client client, FluxSink<RegistryChange> sink) {
		long from;
		synchronized (lock) {
			from = revision + 1;
		}
		// Each watch's events count only while it is the current one: a closed one's late events are dropped.
		boolean[] live = { true };
		WatchOption option = WatchOption.builder().isPrefix(true).withRevision(from).withCreateNotify(true).build();
		Watch.Watcher watcher = client.getWatchClient().watch(RegistryKeys.bytes(keys.instances()), option,
				Watch.listener(response -> {
					List<RegistryChange> changes = new ArrayList<>();
					HistoryLost lost;
					synchronized (lock) {
						if (!live[0]) {
							return;
						}
						lost = apply(response, changes);
						if (lost != null) {
							read = Read.AFTER_GRACE;
						}
					}
					changes.forEach(c -> {
						LOG.debug("Registry change: {}", c);
						sink.next(c);
					});
					if (lost == null && response.isCreatedNotify()) {
						onWatching.run();
					}
					if (lost != null) {
						LOG.warn("{}: reading every key under {} again in {} ms, once the ranks still alive registered "
								+ "again", lost.getMessage(), keys.instances(), grace.toMillis());
						sink.error(lost);
					}
				}, sink::error, sink::complete));
		sink.onDispose(() -> {
			synchronized (lock) {
				live[0] = false;
			}
			watcher.close();
		});
	}

	/**
	 * Applies one answer of the watch to the keys held (under the lock), adding what changed to {@code changes}.
	 *
	 * @return why the history the watch follows broke, or null
	 */
	private @Nullable HistoryLost apply(WatchResponse response, List<RegistryChange> changes) {
		if (response.isCreatedNotify()) {
			long now = response.getHeader().getRevision();
			return now < revision ? new HistoryLost("etcd's revision went back from " + revision + " to " + now
					+ " (etcd lost its data: restarted with an empty data directory, or restored from a backup)")
					: null;
		}
		for (WatchEvent event : response.getEvents()) {
			KeyValue kv = event.getKeyValue();
			String key = kv.getKey().toString(StandardCharsets.UTF_8);
			if (keys.parse(key) == null) {
				revision = Math.max(revision, kv.getModRevision());
				continue;
			}
			boolean deleted = event.getEventType() == WatchEvent.EventType.DELETE;
			ByteSequence before = known.get(key);
			if (!deleted && kv.getVersion() == 1 && before != null) {
				return new HistoryLost("etcd created key " + key + " anew at revision " + kv.getModRevision()
						+ ", although the watch never saw it deleted (etcd lost its data)");
			}
			revision = Math.max(revision, kv.getModRevision());
			ByteSequence after = deleted ? null : kv.getValue();
			if (after == null) {
				known.remove(key);
			}
			else {
				known.put(key, after);
			}
			RegistryChange c = change(key, before, after);
			if (c != null) {
				changes.add(c);
			}
		}
		return null;
	}

	/**
	 * @param before the key's value before, null when it did not exist
	 * @param after its value now, null when it is gone
	 * @return what the key's change means for decode ranks, or {@code null} when nothing they cached went stale (a key
	 *         created, or written again with the same value)
	 */
	private @Nullable RegistryChange change(String name, @Nullable ByteSequence before, @Nullable ByteSequence after) {
		RegistryKeys.Parsed key = keys.parse(name);
		if (key == null || before == null) {
			return null;
		}
		if (key.isInfo()) {
			return after == null || !RegistryCodec.sameSizes(before.getBytes(), after.getBytes())
					? RegistryChange.instance(key.instance()) : null;
		}
		if (after == null) {
			return new RegistryChange(key.instance(), RegistryChange.Kind.RANK_REMOVED, key.dpGroup(), key.tpRank(),
					key.ppRank());
		}
		return Arrays.equals(before.getBytes(), after.getBytes()) ? null
				: rankChanged(key, before.getBytes(), after.getBytes());
	}

	/**
	 * A rank value rewritten with the same endpoints and another incarnation is the rank's restart; any other rewrite
	 * moved it (an unreadable value counts as moved: what decode cached of it is stale either way).
	 */
	private static RegistryChange rankChanged(RegistryKeys.Parsed key, byte[] before, byte[] after) {
		RankRoute old;
		RankRoute now;
		try {
			old = RegistryCodec.readRoute(before);
			now = RegistryCodec.readRoute(after);
		}
		catch (IllegalArgumentException e) {
			return new RegistryChange(key.instance(), RegistryChange.Kind.RANK_MOVED, key.dpGroup(), key.tpRank(),
					key.ppRank());
		}
		RegistryChange.Kind kind = old.endpoints().equals(now.endpoints()) ? RegistryChange.Kind.RANK_RESTARTED
				: RegistryChange.Kind.RANK_MOVED;
		return new RegistryChange(key.instance(), kind, key.dpGroup(), key.tpRank(), key.ppRank(), now.incarnation());
	}

	/** The history between the last revision seen and now is gone: the keys must be read again. */
	static final class HistoryLost extends RuntimeException {

		private static final long serialVersionUID = 1L;

		HistoryLost(String message) {
			super(message, null, false, false);
		}
	}
}
