package io.kvferry.transport.netty;

import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;

import io.kvferry.DecodeKVManager;
import io.kvferry.HostPort;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVTransferException;
import io.kvferry.ParallelLayout;
import io.kvferry.RoomClaim;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import io.kvferry.harness.RankMemory;

/**
 * A decode instance of {@link RetargetProcessTest} in a JVM of its own, which the test kills with SIGKILL or lets
 * finish. {@code BOOTSTRAP ROOM CLAIM FIRST_PAGE}: asks the prefill instance behind BOOTSTRAP for ROOM with the
 * owner's CLAIM ({@link RoomClaim#text()}) into RetargetProcessTest.PAGES consecutive pages from FIRST_PAGE, prints
 * {@code transferring ROOM} once the room's first bytes landed, then {@code ok ROOM verified MS} once every byte landed
 * and matches the room's pattern (MS: from asking to Success; {@code mismatch ROOM WHAT} when not), or
 * {@code failed ROOM CAUSE REASON}. Runs until killed.
 */
final class RetargetDecodeMain {

	private RetargetDecodeMain() {
	}

	public static void main(String[] args) throws InterruptedException {
		HostPort bootstrap = HostPort.parse(args[0]);
		long room = Long.parseLong(args[1]);
		RoomClaim claim = RoomClaim.parse(args[2]);
		int first = Integer.parseInt(args[3]);
		int[] pages = new int[RetargetProcessTest.PAGES];
		Arrays.setAll(pages, i -> first + i);
		RankMemory memory = RankMemory.decode(RetargetProcessTest.SHAPE, ParallelLayout.SINGLE,
				first + RetargetProcessTest.PAGES, 0, 0);
		DecodeKVManager decode = KVManagerSpec.decode().kvArgs(memory.kvArgs())
				.transport(NettyKVTransport.create().eventLoopThreads(1))
				.bootstrapClient(ReactorBootstrapClient.create()).startNow();
		long asked = System.nanoTime();
		KVReceiver r = decode.receiver(bootstrap, room);
		r.claim(claim);
		r.sendMetadata(pages, -1, new int[0]);
		r.states().filter(s -> s == KVPoll.TRANSFERRING).next().subscribe(s -> System.out.println("transferring "
				+ room));
		r.completion().subscribe(null, e -> System.out.println("failed " + room + " "
				+ (e instanceof KVTransferException k ? k.failureCause() + " " + k.reason() : e)), () -> {
					double ms = (System.nanoTime() - asked) / 1e6;
					String wrong = memory.verify(room, pages, -1, new int[0]);
					System.out.println(wrong == null ? String.format(Locale.ROOT, "ok %d verified %.1f", room, ms)
							: "mismatch " + room + " " + wrong);
				});
		new CountDownLatch(1).await();
	}
}
