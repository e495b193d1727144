package io.kvferry.internal;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import io.kvferry.KVPoll;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * A room's whole life in a manager's room table: admitted, then Bootstrapping → WaitingForInput → Transferring →
 * Success, each change published on the (unsubscribed) event stream and each non-terminal state arming its timeout.
 * With 0 or 10,000 other rooms live in the table: the cost of one room must not grow with how many others there are.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class RoomTableBenchmark {

	@Param({ "0", "10000" })
	public int liveRooms;

	private Scheduler timer;
	private RoomTable<Room> table;
	private long next;

	@Setup(Level.Trial)
	public void setUp() {
		timer = Schedulers.newSingle("kvferry-bench-timer");
		table = new RoomTable<>("bench", timer, Schedulers.immediate(), Duration.ofSeconds(300),
				Duration.ofSeconds(300), Duration.ofSeconds(300), 1024, (r, s) -> { }, r -> { });
		for (int i = 0; i < liveRooms; i++) {
			table.advance(table.getOrCreate(-1 - i, n -> new Room(n, table)), KVPoll.TRANSFERRING);
		}
	}

	@TearDown(Level.Trial)
	public void tearDown() {
		timer.dispose();
	}

	@Benchmark
	public KVPoll roomLifecycle() {
		Room room = table.getOrCreate(next++, n -> new Room(n, table));
		table.advance(room, KVPoll.BOOTSTRAPPING);
		table.advance(room, KVPoll.WAITING_FOR_INPUT);
		table.advance(room, KVPoll.TRANSFERRING);
		table.advance(room, KVPoll.SUCCESS);
		return room.state();
	}

	/** What every data frame's path asks: the live room of a header (a lookup among the live rooms). */
	@Benchmark
	public Room lookup() {
		return table.get(-1 - (next++ % Math.max(1, liveRooms)));
	}
}
