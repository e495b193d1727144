package io.kvferry.examples.snippets;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import io.kvferry.DecodeKVManager;
import io.kvferry.HostPort;
import io.kvferry.KVArgs;
import io.kvferry.KVManager;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.ParallelLayout;
import io.kvferry.PrefillKVManager;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.kvferry.transport.netty.NettyKVTransport;

/**
 * A room in the other direction: the second turn of a chat pulls the first turn's KV back from the decode instance.
 * Instance A prefills turn one and sends it to instance B; B decodes, writing one more page of KV; for turn two, B is
 * the sender and A the receiver, so A starts from everything B holds instead of recomputing it. Each instance runs a
 * prefill manager (sender) and a decode manager (receiver) over the same registered cache; an instance that sends
 * hosts the bootstrap server its receivers look it up in, as every SGLang prefill instance does. The same rules hold
 * in both directions: the receiver grants only the pages it named, and judges success by its own ledger.
 */
public final class SecondTurn {

	private static final Duration TIMEOUT = Duration.ofSeconds(30);

	private SecondTurn() {
	}

	/**
	 * What the two turns left in instance A's cache.
	 *
	 * @param firstTurnIntact whether B received turn one's pages and aux row intact
	 * @param backOnA whether A's turn-two pages hold turn one's pages followed by the page B decoded
	 */
	public record Turns(boolean firstTurnIntact, boolean backOnA) {
	}

	/**
	 * Moves turn one from A to B, lets B decode one page, and moves both back to A.
	 *
	 * @return what arrived where
	 */
	public static Turns run() {
		DisposableBootstrapServer bootstrapA = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		DisposableBootstrapServer bootstrapB = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		NettyKVTransport transport = NettyKVTransport.create();
		ReactorBootstrapClient client = ReactorBootstrapClient.create();
		KVArgs cacheA = Cache.args();
		KVArgs cacheB = Cache.args();
		int[] promptOnA = { 3, 4, 9, 17 };
		int[] promptOnB = { 0, 1, 2, 30 };
		int[] decodedOnB = { 31 };
		int[] chatOnB = { 0, 1, 2, 30, 31 };
		int[] chatOnA = { 20, 21, 22, 23, 24 };
		Cache.fill(cacheA, promptOnA, 0, 1);
		List<KVManager> started = new ArrayList<>();
		try {
			// tag::second-turn[]
			// Each instance sends from and receives into its one cache; a sending instance hosts a bootstrap server.
			PrefillKVManager senderA = KVManagerSpec.prefill().kvArgs(cacheA).layout(ParallelLayout.tp(1, 0))
					.transport(transport).bootstrapClient(client).bootstrapAddress(bootstrapA.address())
					.bindAddress(new HostPort("127.0.0.1", 0)).startNow(TIMEOUT);
			DecodeKVManager receiverA = KVManagerSpec.decode().kvArgs(cacheA)
					.transport(transport).bootstrapClient(client).startNow(TIMEOUT);
			PrefillKVManager senderB = KVManagerSpec.prefill().kvArgs(cacheB).layout(ParallelLayout.tp(1, 0))
					.transport(transport).bootstrapClient(client).bootstrapAddress(bootstrapB.address())
					.bindAddress(new HostPort("127.0.0.1", 0)).startNow(TIMEOUT);
			DecodeKVManager receiverB = KVManagerSpec.decode().kvArgs(cacheB)
					.transport(transport).bootstrapClient(client).startNow(TIMEOUT);
			started.addAll(List.of(receiverB, senderB, receiverA, senderA));     // disposed when the chat ends

			// Turn one, A -> B: the usual prefill to decode room.
			KVReceiver turnOneIn = receiverB.receiver(bootstrapA.address(), 1);
			turnOneIn.sendMetadata(promptOnB, 1, new int[0]);
			KVSender turnOneOut = senderA.sender(1);
			turnOneOut.init(promptOnA.length, 0);
			turnOneOut.send(promptOnA, new int[0]);
			turnOneIn.completion().block(TIMEOUT);
			turnOneOut.completion().block(TIMEOUT);

			// B decodes: its engine writes the new tokens' KV into another page.
			Cache.fill(cacheB, decodedOnB, 2, 2);

			// Turn two, B -> A: A admits a room from B's bootstrap server; B sends the prompt's and the decoded pages.
			KVReceiver turnTwoIn = receiverA.receiver(bootstrapB.address(), 2);
			turnTwoIn.sendMetadata(chatOnA, 3, new int[0]);
			KVSender turnTwoOut = senderB.sender(2);
			turnTwoOut.init(chatOnB.length, 2);
			turnTwoOut.send(chatOnB, new int[0]);
			turnTwoIn.completion().block(TIMEOUT);      // A's ledger saw every byte land: prefill of turn two may start
			turnTwoOut.completion().block(TIMEOUT);
			// end::second-turn[]
			boolean firstTurnIntact = Cache.same(cacheA, promptOnA, 0, cacheB, promptOnB, 1);
			boolean backOnA = Cache.same(cacheB, chatOnB, 2, cacheA, chatOnA, 3);
			return new Turns(firstTurnIntact, backOnA);
		}
		finally {
			started.forEach(m -> m.disposeNow(TIMEOUT));
			transport.disposeNow(TIMEOUT);
			client.dispose();
			bootstrapB.disposeNow();
			bootstrapA.disposeNow();
		}
	}

	/**
	 * Runs the example.
	 *
	 * @param args none
	 */
	public static void main(String[] args) {
		Turns t = run();
		System.out.println("turn one on B: " + (t.firstTurnIntact() ? "intact" : "bytes differ") + "; turn two back on A: "
				+ (t.backOnA() ? "intact" : "bytes differ"));
		if (!t.firstTurnIntact() || !t.backOnA()) {
			System.exit(1);
		}
	}
}
