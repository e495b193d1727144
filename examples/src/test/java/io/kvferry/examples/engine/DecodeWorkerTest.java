package io.kvferry.examples.engine;

import java.time.Duration;
import java.util.List;

import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.kvferry.transport.netty.NettyKVTransport;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.assertj.core.api.Assertions.assertThat;

/** The decode loop when a transfer never comes. */
@Timeout(60)
class DecodeWorkerTest {

	@Test
	void aRoomWhosePrefillNeverComesIsReportedFailedWithoutTokens() throws Exception {
		TinyConfig tiny = TinyConfig.tiny();
		PagedKVCache cache = PagedKVCache.allocate(tiny, 1, 4, 8, 1, 1);
		DisposableBootstrapServer server = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		NettyKVTransport transport = NettyKVTransport.create();
		ReactorBootstrapClient client = ReactorBootstrapClient.create();
		try (KVFerryLink link = KVFerryLink.decode(cache.kvArgs(), server.address(), transport, client,
				TinyEngine.TIMEOUT)) {
			DecodeWorker worker = new DecodeWorker(new TinyTransformer(tiny), cache, link, (room, c, table) -> {
				throw new AssertionError("room " + room + " cannot have landed");
			});
			worker.admit(7, new int[5], 3);
			List<Generation> results = worker.run(Duration.ofMillis(500));
			assertThat(results).singleElement().satisfies(g -> {
				assertThat(g.room()).isEqualTo(7);
				assertThat(g.failure()).isNotBlank();
				assertThat(g.tokens()).isEmpty();
				assertThat(g.logits()).isEmpty();
			});
		}
		finally {
			transport.disposeNow(TinyEngine.TIMEOUT);
			client.dispose();
			server.disposeNow();
		}
	}
}
