package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.Random;

import io.kvferry.HostPort;
import io.kvferry.testing.InMemoryBootstrap;
import io.kvferry.testing.KVCluster;
import io.kvferry.testing.ModelShape;
import io.kvferry.testing.RoomResult;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class InMemoryTransferTest {

	private static final ModelShape SMALL = new ModelShape(4, 4, 16, 2, 4, false, 0, 64, 0);

	private static KVCluster cluster(ModelShape shape, int pTp, int pPp, int pDp, int dTp, int dPp) {
		return KVCluster.builder().shape(shape).prefill(pTp, pPp, pDp).decode(dTp, dPp).capacity(128, 16)
				.transport(InMemoryKVTransport.create()).bootstrapClient(new InMemoryBootstrap())
				.bootstrapAddress(new HostPort("127.0.0.1", 8998)).startNow(Duration.ofSeconds(10));
	}

	@Test
	void movesOneRoomByteExact() {
		KVCluster c = cluster(SMALL, 1, 1, 1, 1, 1);
		RoomResult r = c.run(7, 100, 3, new Random(1)).block(Duration.ofSeconds(10));
		assertThat(r.failure()).isNull();
		assertThat(r.pages()).isEqualTo(25);
		c.close().block(Duration.ofSeconds(5));
	}

	@ParameterizedTest
	@CsvSource({ "1,1,1,2,1,false", "2,1,1,1,1,false", "2,1,1,1,1,true", "1,1,1,4,1,true", "4,1,1,2,1,false",
			"1,2,1,1,1,false", "2,2,1,2,2,false", "2,1,2,2,1,false", "8,1,1,2,1,false", "2,1,1,8,1,false" })
	void movesRoomsAcrossTopologies(int pTp, int pPp, int pDp, int dTp, int dPp, boolean mla) {
		ModelShape shape = mla ? new ModelShape(4, 1, 64, 2, 4, true, 0, 64, 0) : SMALL;
		KVCluster c = cluster(shape, pTp, pPp, pDp, dTp, dPp);
		Random random = new Random(42);
		for (long room = 1; room <= 6; room++) {
			RoomResult r = c.run(room, 1 + random.nextInt(200), 1 + random.nextInt(4), random)
					.block(Duration.ofSeconds(10));
			assertThat(r.failure()).as("room %d", room).isNull();
		}
		c.close().block(Duration.ofSeconds(5));
	}
}
