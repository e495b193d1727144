package io.kvferry.internal;

import java.util.Arrays;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import io.kvferry.internal.stripe.DialledConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.SendListener;
import reactor.core.Disposable;
import reactor.core.Disposables;
import reactor.core.scheduler.Scheduler;

/**
 * Renews the leases of the rooms a decode session asked of its prefill rank, while the rank holds them on leases: one
 * message for all of them (one per {@link KVMessage.Renew#MAX_ROOMS}), never one per room. A room not asked yet is
 * listed too; the rank ignores it.
 */
final class LeaseRenewals {

	private final DialledConnection connection;
	private final Set<Room> rooms;
	private final Scheduler timer;
	private volatile Disposable task = Disposables.disposed();

	/**
	 * @param connection the rank's connection, which carries the renewals
	 * @param rooms the rooms asked of the rank, read at each renewal
	 * @param timer runs the renewals
	 */
	LeaseRenewals(DialledConnection connection, Set<Room> rooms, Scheduler timer) {
		this.connection = connection;
		this.rooms = rooms;
		this.timer = timer;
	}

	/** Renews every {@code millis} from now on, instead of any period before; nothing once the connection closed. */
	void every(long millis) {
		task.dispose();
		Disposable d = timer.schedulePeriodically(this::renew, millis, millis, TimeUnit.MILLISECONDS);
		task = d;
		if (connection.isClosed()) {
			d.dispose();
		}
	}

	/** Stops renewing: the connection is closing. */
	void stop() {
		task.dispose();
	}

	private void renew() {
		if (rooms.isEmpty()) {
			return;
		}
		long[] ids = new long[KVMessage.Renew.MAX_ROOMS];
		int n = 0;
		for (Room r : rooms) {
			ids[n++] = r.id;
			if (n == ids.length) {
				send(ids, n);
				n = 0;
			}
		}
		if (n > 0) {
			send(ids, n);
		}
	}

	private void send(long[] ids, int n) {
		// Lost only with the connection, whose closing fails the rooms anyway.
		connection.send(new KVMessage.Renew(Arrays.copyOf(ids, n)), SendListener.NONE);
	}
}
