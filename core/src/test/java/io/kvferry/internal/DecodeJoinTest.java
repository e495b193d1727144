package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;

import io.kvferry.DecodeKVManager;
import io.kvferry.HostPort;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVReceiver;
import io.kvferry.ParallelLayout;
import io.kvferry.bootstrap.PrefillRegistration;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.KVTransport;
import io.kvferry.spi.PeerLayout;
import io.kvferry.test.InMemoryBootstrap;
import io.kvferry.test.NoopConnectionHandler;
import io.kvferry.transport.local.InMemoryKVTransport;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;

/**
 * Decode takes a further stripe's {@code JOINED} only for the stripe it joined: a prefill that answers stripe 1 with
 * another index ends the session before any room is asked, and the room's failure names the answer.
 */
class DecodeJoinTest {

	private static final Duration T = Duration.ofSeconds(10);
	private static final ModelShape SHAPE = new ModelShape(1, 2, 16, 2, 4, false, 0, 0, 0);
	private static final HostPort BOOTSTRAP = new HostPort("10.0.0.8", 1);

	@Test
	void aJoinedForAnotherStripeEndsTheSession() {
		InMemoryKVTransport transport = InMemoryKVTransport.create();
		InMemoryBootstrap bootstrap = new InMemoryBootstrap();
		RankMemory prefillMem = RankMemory.prefill(SHAPE, ParallelLayout.SINGLE, 4, 0, 0);
		RankMemory decodeMem = RankMemory.decode(SHAPE, ParallelLayout.SINGLE, 4, 0, 0);
		KVTransport.Listener rogue = transport.listen(new HostPort("127.0.0.1", 0), c -> new NoopConnectionHandler() {
			@Override
			public void onMessage(KVConnection conn, KVMessage m) {
				if (m instanceof KVMessage.Hello) {
					conn.send(new KVMessage.HelloAck(PeerLayout.of(prefillMem.kvArgs(), ParallelLayout.SINGLE), 42));
				}
				else if (m instanceof KVMessage.Join j) {
					conn.send(new KVMessage.Joined(j.stripe() + 1));
				}
			}
		}).block(T);
		bootstrap.register(BOOTSTRAP, PrefillRegistration.prefill(ParallelLayout.SINGLE, "127.0.0.1",
				rogue.address().port(), SHAPE.pageSize())).block(T);
		DecodeKVManager decode = KVManagerSpec.decode().kvArgs(decodeMem.kvArgs()).transport(transport)
				.bootstrapClient(bootstrap).stripes(2).startNow();
		try {
			KVReceiver r = decode.receiver(BOOTSTRAP, 1);
			StepVerifier.create(r.completion())
					.expectErrorSatisfies(e -> assertThat(e).hasMessageContaining("unexpected Joined[stripe=2] from "
							+ "prefill on stripe 1"))
					.verify(T);
		}
		finally {
			decode.disposeNow(T);
			rogue.dispose();
		}
	}
}
