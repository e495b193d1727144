package io.kvferry.internal;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;

import io.kvferry.FailureCause;
import io.kvferry.KVArgs;
import io.kvferry.MemoryRegion;
import io.kvferry.spi.PeerLayout;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;

/**
 * A decode rank's regions swapped at run time: rooms are refused meanwhile, the old regions stay registered until no
 * byte can land in them any more, and the prefill ranks hear the new layout on the connections they have, before any
 * room that lands in the new regions. One re-registration at a time.
 */
final class Reregistration {

	private static final Logger log = LoggerFactory.getLogger(Reregistration.class);

	private final DecodeSupport support;
	private final RoomTable<DecodeRoom> table;
	// The transport's registration of the regions in use: updating it releases the one before.
	private final Disposable.Swap registration;
	// The sessions to tell of new regions.
	private final Set<DecodeSession> open;
	// Rooms whose pages a prefill rank may still write: a room leaves once released, which a failed one is only once
	// its ranks went quiet, after it left the room table.
	private final Set<DecodeRoom> unreleased = ConcurrentHashMap.newKeySet();
	private final AtomicBoolean running = new AtomicBoolean();

	Reregistration(DecodeSupport support, RoomTable<DecodeRoom> table, Disposable.Swap registration,
			Set<DecodeSession> open) {
		this.support = support;
		this.table = table;
		this.registration = registration;
		this.open = open;
	}

	/** @return every region of {@code args}, as a transport registers them (at a manager's start, and here) */
	static List<MemoryRegion> regions(KVArgs args) {
		List<MemoryRegion> all = new ArrayList<>(args.kvRegions());
		all.addAll(args.auxRegions());
		all.addAll(args.stateRegions());
		return all;
	}

	/** Counts an admitted room until no byte can land in its pages any more. */
	void admitted(DecodeRoom r) {
		unreleased.add(r);
		r.released().subscribe(null, null, () -> unreleased.remove(r));
	}

	/**
	 * @return the new layout of {@code args} on this rank
	 * @throws IllegalArgumentException when {@code args} changes more than the regions
	 */
	PeerLayout check(KVArgs args) {
		Objects.requireNonNull(args, "args");
		PeerLayout was = support.registered.layout();
		PeerLayout now = PeerLayout.of(args, support.config.layout(), false, false);
		String before = shape(was);
		String after = shape(now);
		if (!before.equals(after)) {
			throw new IllegalArgumentException("args : the new regions change the rank's layout from " + before + " to "
					+ after + " (expected: only the regions' addresses, item lengths and item counts change; "
					+ "start another manager for another layout)");
		}
		return now;
	}

	/** @return what a re-registration keeps of a layout: everything but the regions' item lengths and counts */
	private static String shape(PeerLayout l) {
		return "{engineRank=" + l.engineRank() + " pageSize=" + l.pageSize() + " mla=" + l.mla() + " dtype=" + l.dtype()
				+ " kvHeads=" + l.kvHeadNum() + "/" + l.totalKvHeadNum() + " startLayer=" + l.startLayer()
				+ " draftLayers=" + l.draftLayers() + " regions=" + l.kv().size() + "/" + l.aux().size() + "/"
				+ l.state().size() + " stateKinds=" + l.stateKinds() + " stateTpDims=" + l.stateTpDims() + " model='"
				+ l.modelId() + "' modelLayers=" + l.modelLayers() + " kvLayout=" + l.kvLayout() + "}";
	}

	/**
	 * @param args the new regions, checked by {@link #check}
	 * @param layout their layout, from {@link #check}
	 * @return the new generation, once the new regions are in use
	 */
	Mono<Integer> run(KVArgs args, PeerLayout layout, Duration deadline) {
		return Mono.defer(() -> {
			if (!running.compareAndSet(false, true)) {
				return Mono.error(new IllegalStateException("KV manager " + support.name
						+ " is already re-registering its regions"));
			}
			long started = System.nanoTime();
			table.pause("KV manager " + support.name + " is re-registering its regions and admits no new rooms");
			// Admissions stopped: no room joins the table any more until the swap. A room admitted just before may
			// not be counted in unreleased yet, but it is in the table.
			Set<DecodeRoom> rooms = new LinkedHashSet<>(unreleased);
			rooms.addAll(table.all());
			List<DecodeRoom> held = new ArrayList<>(rooms);
			log.info("[{}] re-registering its regions: admitting no new rooms, {} in flight may take up to {}",
					support.name, held.size(), deadline);
			Mono<Void> quiet = Mono.when(held.stream().map(DecodeRoom::released).toList());
			return quiet
					.timeout(deadline, Mono.defer(() -> {
						abort(held, deadline);
						return quiet;
					}), support.config.timer())
					.then(support.config.transport().register(regions(args)))
					.map(next -> swap(args, layout, next, started))
					.doOnError(e -> {
						log.warn("[{}] re-registration failed, the old regions stay in use: {}", support.name,
								Failures.describe(e));
						resume();
					})
					.doOnCancel(this::resume);
		});
	}

	private void abort(List<DecodeRoom> held, Duration deadline) {
		int aborted = 0;
		for (DecodeRoom r : held) {
			if (table.fail(r, FailureCause.DRAINING, "KV manager " + support.name + " was re-registering its regions "
					+ "and room " + r.id + " did not end within the deadline of " + deadline + "; aborted", false)) {
				aborted++;
			}
		}
		log.warn("[{}] re-registration deadline of {} passed: aborted {} rooms", support.name, deadline, aborted);
	}

	/** No byte can land in the old regions: rooms land in the new ones from now on, and the prefill ranks hear so. */
	private int swap(KVArgs args, PeerLayout layout, Disposable next, long started) {
		DecodeSupport.Registered was = support.registered;
		DecodeSupport.Registered now = new DecodeSupport.Registered(args, layout,
				Math.addExact(was.generation(), 1));
		support.registered = now;
		registration.update(next);
		for (DecodeSession s : open) {
			s.announce();
		}
		resume();
		log.info("[{}] re-registered its regions in {} µs: generation {}, {} prefill ranks told", support.name,
				(System.nanoTime() - started) / 1000, now.generation(), open.size());
		return now.generation();
	}

	private void resume() {
		table.resume();
		running.set(false);
	}
}
