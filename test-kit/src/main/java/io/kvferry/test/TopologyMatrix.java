package io.kvferry.test;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import io.kvferry.HostPort;
import io.kvferry.bootstrap.BootstrapClient;
import io.kvferry.spi.KVTransport;

/**
 * The topology matrix every transport must pass: prefill TP × decode TP in {1,2,4}², MHA with KV heads
 * above and below TP and MLA, prefill PP {1,2} × decode PP {1, equal}, prefill DP {1,2}, draft layers on decode,
 * state slots, and a layer-wise column on a few cells. Each case moves rooms with scattered and contiguous pages in
 * several chunks and checks every byte.
 */
public final class TopologyMatrix {

	/** One cell of the matrix. */
	public record Case(int prefillTp, int decodeTp, String model, int prefillPp, int decodePp, int prefillDp,
			boolean layerwise) {

		/** A case whose chunks are all sent whole. */
		public Case(int prefillTp, int decodeTp, String model, int prefillPp, int decodePp, int prefillDp) {
			this(prefillTp, decodeTp, model, prefillPp, decodePp, prefillDp, false);
		}

		@Override
		public String toString() {
			return "P" + prefillTp + "->D" + decodeTp + " " + model + " pp" + prefillPp + "->" + decodePp + " dp"
					+ prefillDp + (layerwise ? " layerwise" : "");
		}

		/** 4 layers; MHA with 8 heads (above TP) or 2 heads (below TP 4), or MLA; one draft layer on decode. */
		public ModelShape shape() {
			switch (model) {
				case "mha8":
					return new ModelShape(4, 8, 8, 2, 4, false, 1, 64, 32);
				case "mha2":
					return new ModelShape(4, 2, 16, 2, 4, false, 1, 64, 32);
				default:
					return new ModelShape(4, 1, 32, 2, 4, true, 1, 64, 32);
			}
		}
	}

	private TopologyMatrix() {
	}

	/** @return every case of the matrix */
	public static List<Case> cases() {
		List<Case> out = new ArrayList<>();
		int[] tps = { 1, 2, 4 };
		String[] models = { "mha8", "mha2", "mla" };
		int[][] pps = { { 1, 1 }, { 2, 1 }, { 2, 2 } };
		for (int p : tps) {
			for (int d : tps) {
				for (String m : models) {
					for (int[] pp : pps) {
						for (int dp = 1; dp <= 2; dp++) {
							out.add(new Case(p, d, m, pp[0], pp[1], dp));
						}
					}
				}
			}
		}
		// The layer-wise column, on the cells that stress how decode counts a layer's bytes: head slices from
		// several prefill ranks, replicated heads, MLA's dummy ranks, PP stages into one decode rank and into stages.
		out.add(new Case(4, 1, "mha8", 2, 1, 1, true));
		out.add(new Case(1, 4, "mha2", 2, 2, 1, true));
		out.add(new Case(4, 2, "mha2", 1, 1, 2, true));
		out.add(new Case(2, 4, "mla", 2, 1, 1, true));
		out.add(new Case(4, 2, "mla", 2, 2, 1, true));
		return out;
	}

	/**
	 * Runs one case: starts the cluster, moves {@code rooms} rooms, checks every byte, closes the managers.
	 *
	 * @return pages moved
	 */
	public static long run(Case c, KVTransport transport, BootstrapClient client, HostPort bootstrap, int rooms) {
		KVCluster cluster = KVCluster.builder().shape(c.shape()).prefill(c.prefillTp(), c.prefillPp(), c.prefillDp())
				.decode(c.decodeTp(), c.decodePp()).capacity(96, 8).layerwise(c.layerwise()).transport(transport).bootstrapClient(client)
				.bootstrapAddress(bootstrap).startNow(Duration.ofSeconds(30));
		try {
			Random random = new Random(c.hashCode());
			long pages = 0;
			for (int i = 0; i < rooms; i++) {
				long room = 1000L + i;
				RoomResult r = cluster.run(room, 1 + random.nextInt(160), 1 + random.nextInt(3), random)
						.block(Duration.ofSeconds(30));
				assertThat(r).isNotNull();
				assertThat(r.failure()).as("%s room %d", c, room).isNull();
				pages += r.pages();
			}
			return pages;
		}
		finally {
			cluster.close().block(Duration.ofSeconds(10));
		}
	}
}
