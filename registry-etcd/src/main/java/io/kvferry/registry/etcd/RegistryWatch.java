package io.kvferry.registry.etcd;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.common.exception.CompactedException;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import io.kvferry.bootstrap.RankRoute;
import io.kvferry.bootstrap.RegistryChange;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Flux;
import reactor.core.publisher.FluxSink;
import reactor.util.retry.Retry;

/**
 * The watch behind {@link EtcdBootstrapClient#changes()}: every instance under the key prefix, opened by the first
 * subscriber and resumed after the last revision it saw when etcd or the connection fails, so no change is skipped.
 */
final class RegistryWatch {

	private static final Logger LOG = LoggerFactory.getLogger(RegistryWatch.class);

	private RegistryWatch() {
	}

	/**
	 * @param connection the client's etcd connection
	 * @param keys the key layout
	 * @return the changes; cold (each subscription opens a watch of its own)
	 */
	static Flux<RegistryChange> changes(EtcdConnection connection, RegistryKeys keys) {
		AtomicLong seen = new AtomicLong();
		return connection.connection()
				.flatMapMany(client -> Flux.<RegistryChange>create(sink -> open(client, keys, seen, sink)))
				.doOnError(CompactedException.class, e -> {
					// The revisions after the last one seen are gone: changes in between may be lost; watch from now.
					LOG.warn("etcd compacted the revisions after {} before the watch resumed; changes in between may "
							+ "not be reported", seen.get());
					seen.set(0);
				})
				.retryWhen(Retry.backoff(Long.MAX_VALUE, Duration.ofMillis(100)).maxBackoff(Duration.ofSeconds(2))
						.filter(e -> !connection.isDisposed())
						.doBeforeRetry(s -> LOG.warn("etcd watch failed, resuming after revision {}: {}", seen.get(),
								EtcdErrors.map("watch " + keys.instances(), connection.access(), connection.timeout(),
										s.failure()).getMessage())));
	}

	private static void open(Client client, RegistryKeys keys, AtomicLong seen, FluxSink<RegistryChange> sink) {
		WatchOption.Builder option = WatchOption.builder().isPrefix(true).withPrevKV(true);
		if (seen.get() > 0) {
			option.withRevision(seen.get() + 1);
		}
		Watch.Watcher watcher = client.getWatchClient().watch(RegistryKeys.bytes(keys.instances()), option.build(),
				Watch.listener(response -> {
					for (WatchEvent event : response.getEvents()) {
						seen.accumulateAndGet(event.getKeyValue().getModRevision(), Math::max);
						RegistryChange change = toChange(keys, event);
						if (change != null) {
							LOG.debug("Registry change: {}", change);
							sink.next(change);
						}
					}
				}, sink::error, sink::complete));
		sink.onDispose(watcher::close);
	}

	/** @return what the event changed for decode ranks, or {@code null} when nothing they cached went stale */
	static @Nullable RegistryChange toChange(RegistryKeys keys, WatchEvent event) {
		RegistryKeys.Parsed key = keys.parse(event.getKeyValue().getKey().toString(StandardCharsets.UTF_8));
		if (key == null) {
			return null;
		}
		boolean deleted = event.getEventType() == WatchEvent.EventType.DELETE;
		KeyValue prev = event.getPrevKV();
		boolean hadValue = prev != null && prev.getVersion() > 0;
		if (key.isInfo()) {
			if (deleted || (hadValue && !RegistryCodec.sameSizes(prev.getValue().getBytes(),
					event.getKeyValue().getValue().getBytes()))) {
				return RegistryChange.instance(key.instance());
			}
			return null;
		}
		if (deleted) {
			return new RegistryChange(key.instance(), RegistryChange.Kind.RANK_REMOVED, key.dpGroup(), key.tpRank(),
					key.ppRank());
		}
		if (hadValue && !prev.getValue().equals(event.getKeyValue().getValue())) {
			return rankChanged(key, prev.getValue().getBytes(), event.getKeyValue().getValue().getBytes());
		}
		return null;
	}

	/**
	 * A rank value rewritten with the same endpoint and another incarnation is the rank's restart; any other rewrite
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
		RegistryChange.Kind kind = old.endpoint().equals(now.endpoint()) ? RegistryChange.Kind.RANK_RESTARTED
				: RegistryChange.Kind.RANK_MOVED;
		return new RegistryChange(key.instance(), kind, key.dpGroup(), key.tpRank(), key.ppRank(), now.incarnation());
	}
}
