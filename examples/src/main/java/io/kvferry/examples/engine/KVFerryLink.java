package io.kvferry.examples.engine;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import java.util.function.Supplier;

import io.kvferry.DecodeKVManager;
import io.kvferry.DecodeSpec;
import io.kvferry.HostPort;
import io.kvferry.KVArgs;
import io.kvferry.KVManager;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.ParallelLayout;
import io.kvferry.PrefillKVManager;
import io.kvferry.PrefillSpec;
import io.kvferry.bootstrap.BootstrapClient;
import io.kvferry.spi.KVTransport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The engine's only contact with kvferry's manager API: one {@link KVManager} per attention TP rank of an instance,
 * and per request one {@link Room} that fans each call out to every rank, as each rank's scheduler would make the same
 * call on its own manager.
 *
 * <p>Where each call sits in an engine:
 * <ul>
 * <li>start-up: {@link #prefill} / {@link #decode} with each rank's {@link KVArgs} (its cache's regions); a prefill
 * rank listens and registers with the bootstrap server, a decode rank resolves prefill ranks per request;</li>
 * <li>decode, when a request is admitted and its pages and aux row are allocated: {@link #receive} (kvferry's
 * {@code receiver} and {@code sendMetadata});</li>
 * <li>prefill, when a request starts: {@link #send} (kvferry's {@code sender} and {@code init}), then after each
 * forward chunk {@link Room#send} with the pages that chunk completed, the last call with the rest;</li>
 * <li>both, in the scheduler loop: {@link Room#states()} (the hot state stream; the instance-wide state is the
 * minimum over ranks, as SGLang's all-reduce takes it) or {@link Room#poll()}; {@link Room#completion()}.</li>
 * </ul>
 * Every method returns at once except start-up and {@link #close()}, which block, bounded.
 */
public final class KVFerryLink implements AutoCloseable {

	private static final Logger log = LoggerFactory.getLogger(KVFerryLink.class);
	private static final Duration START_TIMEOUT = Duration.ofSeconds(30);
	private static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(10);
	private static final int[] NO_STATE = new int[0];

	private final List<PrefillKVManager> prefill;
	private final List<DecodeKVManager> decode;
	private final HostPort prefillBootstrap;

	private KVFerryLink(List<PrefillKVManager> prefill, List<DecodeKVManager> decode, HostPort prefillBootstrap) {
		this.prefill = List.copyOf(prefill);
		this.decode = List.copyOf(decode);
		this.prefillBootstrap = prefillBootstrap;
	}

	/**
	 * Starts the prefill ranks: each listens on {@code host}, any free port, and registers with the bootstrap server.
	 *
	 * @param ranks each rank's registered memory, by attention TP rank
	 * @param host where the ranks listen, and the address they register
	 * @param bootstrap the bootstrap server
	 * @param transport the transport (shared; not closed with the link)
	 * @param client the bootstrap client (shared; not closed with the link)
	 * @param stateTimeout bound of each state of a room
	 * @return the running link
	 */
	public static KVFerryLink prefill(List<KVArgs> ranks, String host, HostPort bootstrap, KVTransport transport,
			BootstrapClient client, Duration stateTimeout) {
		List<PrefillSpec> specs = new ArrayList<>();
		for (int r = 0; r < ranks.size(); r++) {
			specs.add(common(KVManagerSpec.prefill(), ranks, r, transport, client, stateTimeout)
					.bootstrapAddress(bootstrap).bindAddress(new HostPort(host, 0)));
		}
		List<PrefillKVManager> managers = start(specs);
		log.info("{} prefill ranks listening on {}", managers.size(), managers.stream()
				.map(PrefillKVManager::endpoint).toList());
		return new KVFerryLink(managers, List.of(), null);
	}

	/**
	 * Starts the decode ranks.
	 *
	 * @param ranks each rank's registered memory, by attention TP rank
	 * @param prefillBootstrap the bootstrap server of the prefill instance requests come from
	 * @param transport the transport (shared; not closed with the link)
	 * @param client the bootstrap client (shared; not closed with the link)
	 * @param stateTimeout bound of each state of a room
	 * @return the running link
	 */
	public static KVFerryLink decode(List<KVArgs> ranks, HostPort prefillBootstrap, KVTransport transport,
			BootstrapClient client, Duration stateTimeout) {
		List<DecodeSpec> specs = new ArrayList<>();
		for (int r = 0; r < ranks.size(); r++) {
			specs.add(common(KVManagerSpec.decode(), ranks, r, transport, client, stateTimeout));
		}
		List<DecodeKVManager> managers = start(specs);
		log.info("{} decode ranks started", managers.size());
		return new KVFerryLink(List.of(), managers, prefillBootstrap);
	}

	private static <S extends KVManagerSpec<S, ?>> S common(S spec, List<KVArgs> ranks, int r, KVTransport transport,
			BootstrapClient client, Duration stateTimeout) {
		return spec.kvArgs(ranks.get(r))
				.layout(ParallelLayout.tp(ranks.size(), r))
				.transport(transport)
				.bootstrapClient(client)
				.bootstrapTimeout(stateTimeout)
				.waitingTimeout(stateTimeout)
				.transferTimeout(stateTimeout);
	}

	private static <M extends KVManager> List<M> start(List<? extends KVManagerSpec<?, M>> specs) {
		List<M> started = new CopyOnWriteArrayList<>();
		try {
			return Flux.fromIterable(specs)
					.flatMapSequential(KVManagerSpec::start)
					.doOnNext(started::add)
					.collectList()
					.block(START_TIMEOUT);
		}
		catch (RuntimeException e) {
			started.forEach(KVManager::dispose);
			throw e;
		}
	}

	/** @return each prefill rank's endpoint (where decode connects), by attention TP rank */
	public List<HostPort> endpoints() {
		return prefill.stream().map(PrefillKVManager::endpoint).toList();
	}

	/**
	 * Prefill: opens a request's room on every rank.
	 *
	 * @param room the request's room
	 * @param numPages pages the request's KV takes (the last {@link Room#send} is the one that reaches it)
	 * @param auxRow the aux row prefill writes the first token into before its last send
	 * @return the room
	 */
	public Room send(long room, int numPages, int auxRow) {
		List<RankRoom> ranks = new ArrayList<>();
		List<KVSender> senders = new ArrayList<>();
		if (prefill.isEmpty()) {
			throw new IllegalStateException("send : on a decode link (expected: a prefill link)");
		}
		for (PrefillKVManager m : prefill) {
			KVSender sender = m.sender(room);
			sender.init(numPages, auxRow);
			senders.add(sender);
			ranks.add(new RankRoom(sender::poll, sender::states, sender::completion, sender::abort));
		}
		return new Room(room, senders, ranks);
	}

	/**
	 * Decode: opens a request's room on every rank and tells prefill where its KV goes.
	 *
	 * @param room the request's room
	 * @param pages destination pages, in token order (the same indices on every rank)
	 * @param auxRow destination aux row
	 * @return the room
	 */
	public Room receive(long room, int[] pages, int auxRow) {
		if (decode.isEmpty()) {
			throw new IllegalStateException("receive : on a prefill link (expected: a decode link)");
		}
		List<RankRoom> ranks = new ArrayList<>();
		for (DecodeKVManager m : decode) {
			KVReceiver receiver = m.receiver(prefillBootstrap, room);
			receiver.sendMetadata(pages, auxRow, NO_STATE);
			ranks.add(new RankRoom(receiver::poll, receiver::states, receiver::completion, receiver::abort));
		}
		return new Room(room, List.of(), ranks);
	}

	/** Disposes every rank's manager (failing its live rooms), bounded. */
	@Override
	public void close() {
		List<KVManager> all = new ArrayList<>(prefill);
		all.addAll(decode);
		all.forEach(KVManager::dispose);
		Flux.fromIterable(all).flatMap(KVManager::onDispose).then().block(CLOSE_TIMEOUT);
	}

	// One rank's side of a room, sender or receiver alike.
	private record RankRoom(Supplier<KVPoll> poll, Supplier<Flux<KVPoll>> states, Supplier<Mono<Void>> completion,
			Consumer<String> abort) {
	}

	/** One request's room on every rank of the instance. Methods return at once; results come on transport threads. */
	public static final class Room {

		private final long room;
		private final List<KVSender> senders;
		private final List<RankRoom> ranks;

		private Room(long room, List<KVSender> senders, List<RankRoom> ranks) {
			this.room = room;
			this.senders = senders;
			this.ranks = ranks;
		}

		public long room() {
			return room;
		}

		/**
		 * Prefill: sends the pages one forward chunk completed, on every rank. Pages must not change until
		 * {@link #completion()}; the call that reaches the room's page count is the last one, after which kvferry
		 * sends the aux row and reports Success.
		 */
		public void send(int[] pages) {
			if (senders.isEmpty()) {
				throw new IllegalStateException("send : on a decode room " + room + " (expected: a prefill room)");
			}
			for (KVSender s : senders) {
				s.send(pages, NO_STATE);
			}
		}

		/** @return the room's state now: the minimum over ranks (Failed on any rank fails the request) */
		public KVPoll poll() {
			return min(ranks.stream().map(r -> r.poll().get()).toArray());
		}

		/**
		 * @return the room's instance-wide state: the current one, then each change of the minimum over ranks;
		 *         completes after Success on every rank or Failed on any
		 */
		public Flux<KVPoll> states() {
			return Flux.combineLatest(ranks.stream().map(r -> r.states().get()).toList(), Room::min)
					.distinctUntilChanged()
					.takeUntil(KVPoll::isTerminal);
		}

		/**
		 * @return completes when every rank succeeded; errors with the first failure (a {@code KVTransferException}),
		 *         after aborting the room on the other ranks so that they do not wait for their timeouts
		 */
		public Mono<Void> completion() {
			return Mono.when(ranks.stream().map(r -> r.completion().get()).toList())
					.onErrorResume(e -> {
						abort("another rank failed: " + e.getMessage());
						return ended().then(Mono.error(e));
					});
		}

		/**
		 * Fails the room on every rank and tells the peers, at once; a second call does nothing. The room's
		 * {@link #completion()} errors once every rank is done with it (decode: its pages may be reused).
		 */
		public void abort(String reason) {
			ranks.forEach(r -> r.abort().accept(reason));
		}

		/** @return completes once every rank's room ended, however: each rank's completion errors only then */
		private Mono<Void> ended() {
			return Mono.when(ranks.stream().map(r -> r.completion().get().onErrorResume(x -> Mono.empty())).toList());
		}

		private static KVPoll min(Object[] states) {
			KVPoll min = KVPoll.SUCCESS;
			for (Object o : states) {
				KVPoll p = (KVPoll) o;
				min = p.code() < min.code() ? p : min;
			}
			return min;
		}
	}
}
