package io.kvferry.transport.netty.it;

import static io.kvferry.transport.netty.it.LiveRoom.range;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.stream.IntStream;

import io.kvferry.DecodeKVManager;
import io.kvferry.KVTransferException;
import io.kvferry.LandedPages;
import io.kvferry.MemoryRegion;
import io.kvferry.PrefillKVManager;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.kvferry.harness.KVCluster;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.Patterns;
import io.kvferry.harness.RankMemory;
import io.kvferry.transport.netty.NettyKVTransport;
import io.netty.util.internal.PlatformDependent;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

/**
 * A room's connection is cut at random points over real TCP: prefill's channel after N data frames (closed from
 * another thread, so the socket stops between frames or inside one), or decode's inside the payload of its N-th frame
 * (so that frame's pages lack some bytes). Decode's failure names the destination pages that landed whole, per layer and for the
 * room, and every page it names holds exactly the room's bytes in those layers, while every other requested page is
 * named missing. Rooms that a late cut lets finish succeed byte-exact.
 */
class LandedPagesIT {

	private static final Duration T = Duration.ofSeconds(60);
	/** 4 layers of Llama-3-8B heads: 16 KiB per page per layer buffer. */
	private static final ModelShape SHAPE = ModelShape.llama3_8b().withLayers(4);
	private static final int ROOM_PAGES = 24;
	private static final int CUTS = 8;
	/** Bytes of one data frame here: one page of one layer buffer. */
	private static final int FRAME_BYTES = SHAPE.itemLen(1);

	@Test
	void failedRoomReportsExactlyThePagesThatLandedWhole() {
		DisposableBootstrapServer server = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		ReactorBootstrapClient client = ReactorBootstrapClient.create();
		// Small socket buffers: the channel still holds part of the room when it closes, cut anywhere in a frame.
		NettyKVTransport netty = NettyKVTransport.create().socketBufferSize(16 * 1024);
		CuttingTransport transport = new CuttingTransport(netty);
		KVCluster cluster = KVCluster.builder().shape(SHAPE).prefill(1, 1, 1).decode(1, 1)
				.capacity(ROOM_PAGES * (CUTS + 2), 16).transport(transport).bootstrapClient(client)
				.bootstrapAddress(server.address()).startNow(T);
		try {
			List<PrefillKVManager> prefill = cluster.prefillManagers().get(0);
			DecodeKVManager decode = cluster.decodeManagers().get(0);
			RankMemory decodeMemory = cluster.decodeMemory().get(0);

			// A whole room first: how many frames one takes.
			int before = transport.frames();
			LiveRoom whole = open(cluster, prefill, decode, 0);
			whole.send(0, ROOM_PAGES / 2);
			whole.send(ROOM_PAGES / 2, ROOM_PAGES);
			whole.completion().block(T);
			assertThat(whole.verify()).isNull();
			int framesPerRoom = transport.frames() - before;
			assertThat(framesPerRoom).as("frames of a room").isGreaterThan(4);

			Random random = new Random(26);
			int failed = 0;
			int partly = 0;
			for (int i = 1; i <= CUTS; i++) {
				int cutAt = random.nextInt(framesPerRoom);
				boolean decodeSide = i % 2 == 0;
				if (decodeSide) {
					// Inside a frame: its pages lack their last bytes, at least one.
					transport.cutDecodeAt(cutAt, random.nextInt(FRAME_BYTES));
				}
				else {
					transport.cutAfter(cutAt);
				}
				LiveRoom room = open(cluster, prefill, decode, i);
				room.send(0, ROOM_PAGES / 2);
				room.send(ROOM_PAGES / 2, ROOM_PAGES);
				Throwable error = room.receivers.get(0).completion().then(Mono.<Throwable>empty())
						.onErrorResume(Mono::just)
						.block(T);
				// The sender ends too (failed, or succeeded before the cut reached it).
				room.senders.get(0).completion().onErrorResume(e -> Mono.empty()).block(T);
				transport.disarm();
				if (error == null) {
					assertThat(room.verify()).as("room %d succeeded after a cut at frame %d", room.id, cutAt).isNull();
					continue;
				}
				failed++;
				assertThat(error).isInstanceOf(KVTransferException.class);
				LandedPages landed = ((KVTransferException) error).landedPages();
				assertThat(landed.isKnown()).isTrue();
				assertThat(landed.requested()).containsExactly(room.dst);
				assertThat(landed.layers()).isEqualTo(SHAPE.layers());
				int[] requested = IntStream.of(room.dst).sorted().toArray();
				assertThat(union(landed.landed(), landed.missing()))
						.as("landed and missing pages together are the requested ones, each once")
						.containsExactly(requested);
				for (int layer = 0; layer < landed.layers(); layer++) {
					for (int page : landed.landed(layer)) {
						assertThat(holds(decodeMemory, room, page, layer))
								.as("room %d (cut at frame %d of %d): page %d reported landed in layer %d", room.id,
										cutAt, framesPerRoom, page, layer)
								.isNull();
					}
					assertThat(union(landed.landed(layer), landed.missing(layer))).containsExactly(requested);
				}
				for (int page : landed.landed()) {
					for (int layer = 0; layer < landed.layers(); layer++) {
						assertThat(landed.landed(layer)).as("a page landed in the room lands in each layer")
								.contains(page);
					}
				}
				if (landed.landed().length > 0 && landed.missing().length > 0) {
					partly++;
				}
			}
			assertThat(failed).as("rooms the cut failed").isGreaterThanOrEqualTo(CUTS / 2);
			assertThat(partly).as("failed rooms with some pages landed and some not").isGreaterThan(0);
		}
		finally {
			cluster.close().block(T);
			netty.disposeNow(T);
			client.dispose();
			server.disposeNow();
		}
	}

	private static int[] union(int[] a, int[] b) {
		return IntStream.concat(Arrays.stream(a), Arrays.stream(b)).sorted().toArray();
	}

	private static LiveRoom open(KVCluster cluster, List<PrefillKVManager> prefill, DecodeKVManager decode, int i) {
		int[] src = range(i * ROOM_PAGES, (i + 1) * ROOM_PAGES);
		// Destinations in another order than the sources, so a page is named as decode named it.
		int[] dst = range(i * ROOM_PAGES, (i + 1) * ROOM_PAGES);
		for (int k = 0; k < dst.length / 2; k++) {
			int t = dst[k];
			dst[k] = dst[dst.length - 1 - k];
			dst[dst.length - 1 - k] = t;
		}
		return LiveRoom.open(cluster.bootstrapAddress(), 100 + i, prefill, cluster.prefillMemory().get(0),
				List.of(decode), cluster.decodeMemory(), src, dst, -1, -1);
	}

	/**
	 * @return null when destination page {@code page} holds the room's bytes in both buffers of {@code layer} (decode
	 *         TP 1 holds every head), else the first wrong word
	 */
	private static String holds(RankMemory memory, LiveRoom room, int page, int layer) {
		int position = IntStream.range(0, room.dst.length).filter(i -> room.dst[i] == page).findFirst().orElseThrow();
		int headWords = SHAPE.headBytes() / 8;
		int heads = SHAPE.headsPerRank(1);
		int itemLen = SHAPE.itemLen(1);
		for (int b = 0; b < 2; b++) {
			MemoryRegion region = memory.kvArgs().kvRegions().get(b * SHAPE.layers() + layer);
			long base = region.address() + (long) page * itemLen;
			for (int t = 0; t < SHAPE.pageSize(); t++) {
				long token = (long) position * SHAPE.pageSize() + t;
				for (int h = 0; h < heads; h++) {
					long seed = Patterns.seed(room.id, layer, b, token, SHAPE.modelHead(1, 0, h));
					long at = base + (long) t * heads * SHAPE.headBytes() + (long) h * SHAPE.headBytes();
					for (int w = 0; w < headWords; w++) {
						long actual = PlatformDependent.getLong(at + 8L * w);
						if (actual != Patterns.word(seed, w)) {
							return "word " + w + " of head " + h + ", token " + t + ", buffer " + b + " is 0x"
									+ Long.toHexString(actual);
						}
					}
				}
			}
		}
		return null;
	}
}
