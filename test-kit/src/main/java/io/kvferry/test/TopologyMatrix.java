package io.kvferry.test;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import io.kvferry.DecodeSpec;
import io.kvferry.HostPort;
import io.kvferry.KVLayout;
import io.kvferry.bootstrap.BootstrapClient;
import io.kvferry.harness.KVCluster;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RoomResult;
import io.kvferry.spi.KVTransport;

/**
 * The topology matrix every transport must pass: prefill TP × decode TP in {1,2,4}², MHA with KV heads
 * above and below TP and MLA, prefill PP {1,2} × decode PP {1, equal}, prefill DP {1,2}, draft layers on decode,
 * state slots; then a few cells of prefill context parallelism (CP {1,2} × all-CP-ranks transfer {off,on}, DSA layer
 * split), decode prefix (none, part, full hit) and a hybrid model with Mamba state across TP 1→2 and 2→1, a
 * layer-wise column on a few cells, cells whose prefill and decode page sizes differ (decode re-pages) and cells of
 * decode context parallelism (each decode DCP rank gets only its tokens), and cells whose prefill and decode order
 * their KV pages differently (NHD and HND: prefill re-lays as it sends). Each case moves rooms with scattered and contiguous pages in several chunks and
 * checks every byte (and, in the added cells, that no decode byte outside a room's pages, aux row and state slots
 * changed).
 */
public final class TopologyMatrix {

	/** One cell of the matrix. */
	/**
	 * One cell of the matrix.
	 *
	 * @param prefillCp prefill attention CP size
	 * @param cpTransfer how CP ranks share a room: {@code rank0} (only CP rank 0 sends), {@code all} (each its
	 *        share of the pages) or {@code layers} (DSA layer split: each its share of the layers)
	 * @param decodePrefix share of each room's pages decode already holds (0, part, 1 = full hit)
	 * @param layerwise whether prefill sends chunks layer by layer (each chunk at random, whole or layer-wise)
	 * @param prefillPage tokens per prefill page (0: the shape's)
	 * @param decodePage tokens per decode page (0: the shape's)
	 * @param decodeDcp decode context-parallel size: decode TP rank t is DCP rank {@code t mod decodeDcp} and holds
	 *        only its share of each room's tokens (MLA)
	 * @param prefillLayout how prefill orders its KV pages
	 * @param decodeLayout how decode orders its KV pages (checked byte by byte in that order)
	 */
	public record Case(int prefillTp, int decodeTp, String model, int prefillPp, int decodePp, int prefillDp,
			int prefillCp, String cpTransfer, double decodePrefix, boolean layerwise, int prefillPage,
			int decodePage, int decodeDcp, KVLayout prefillLayout, KVLayout decodeLayout) {

		/** A cell whose pages are token-major on both sides. */
		public Case(int prefillTp, int decodeTp, String model, int prefillPp, int decodePp, int prefillDp,
				int prefillCp, String cpTransfer, double decodePrefix, boolean layerwise, int prefillPage,
				int decodePage, int decodeDcp) {
			this(prefillTp, decodeTp, model, prefillPp, decodePp, prefillDp, prefillCp, cpTransfer, decodePrefix,
					layerwise, prefillPage, decodePage, decodeDcp, KVLayout.NHD, KVLayout.NHD);
		}

		/** A cell without decode context parallelism. */
		public Case(int prefillTp, int decodeTp, String model, int prefillPp, int decodePp, int prefillDp,
				int prefillCp, String cpTransfer, double decodePrefix, boolean layerwise, int prefillPage,
				int decodePage) {
			this(prefillTp, decodeTp, model, prefillPp, decodePp, prefillDp, prefillCp, cpTransfer, decodePrefix,
					layerwise, prefillPage, decodePage, 1);
		}

		/** A cell whose decode spreads each room's tokens over {@code dcp} DCP ranks. */
		public Case withDecodeDcp(int dcp) {
			return new Case(prefillTp, decodeTp, model, prefillPp, decodePp, prefillDp, prefillCp, cpTransfer,
					decodePrefix, layerwise, prefillPage, decodePage, dcp, prefillLayout, decodeLayout);
		}

		/** A cell whose prefill orders its KV pages as {@code prefill} says and decode as {@code decode} says. */
		public Case withLayouts(KVLayout prefill, KVLayout decode) {
			return new Case(prefillTp, decodeTp, model, prefillPp, decodePp, prefillDp, prefillCp, cpTransfer,
					decodePrefix, layerwise, prefillPage, decodePage, decodeDcp, prefill, decode);
		}

		/** A cell with the shape's page size on both sides. */
		public Case(int prefillTp, int decodeTp, String model, int prefillPp, int decodePp, int prefillDp,
				int prefillCp, String cpTransfer, double decodePrefix, boolean layerwise) {
			this(prefillTp, decodeTp, model, prefillPp, decodePp, prefillDp, prefillCp, cpTransfer, decodePrefix,
					layerwise, 0, 0);
		}

		/** A cell whose prefill pages hold {@code prefillPage} tokens and decode pages {@code decodePage}. */
		public Case withPages(int prefillPage, int decodePage) {
			return new Case(prefillTp, decodeTp, model, prefillPp, decodePp, prefillDp, prefillCp, cpTransfer,
					decodePrefix, layerwise, prefillPage, decodePage, decodeDcp, prefillLayout, decodeLayout);
		}

		/** A cell without CP and without decode prefix, its chunks sent whole. */
		public Case(int prefillTp, int decodeTp, String model, int prefillPp, int decodePp, int prefillDp) {
			this(prefillTp, decodeTp, model, prefillPp, decodePp, prefillDp, 1, "rank0", 0, false);
		}

		/** A cell of CP and decode prefix, its chunks sent whole. */
		public Case(int prefillTp, int decodeTp, String model, int prefillPp, int decodePp, int prefillDp,
				int prefillCp, String cpTransfer, double decodePrefix) {
			this(prefillTp, decodeTp, model, prefillPp, decodePp, prefillDp, prefillCp, cpTransfer, decodePrefix, false);
		}

		/** A cell without CP and without decode prefix. */
		public Case(int prefillTp, int decodeTp, String model, int prefillPp, int decodePp, int prefillDp,
				boolean layerwise) {
			this(prefillTp, decodeTp, model, prefillPp, decodePp, prefillDp, 1, "rank0", 0, layerwise);
		}

		@Override
		public String toString() {
			return "P" + prefillTp + "->D" + decodeTp + " " + model + " pp" + prefillPp + "->" + decodePp + " dp"
					+ prefillDp + (prefillCp == 1 && cpTransfer.equals("rank0") ? "" : " cp" + prefillCp + " " + cpTransfer)
					+ (decodePrefix == 0 ? "" : " prefix" + decodePrefix) + (layerwise ? " layerwise" : "")
					+ (prefillPage == 0 && decodePage == 0 ? "" : " page" + prefillPage + "->" + decodePage)
					+ (decodeDcp == 1 ? "" : " dcp1->" + decodeDcp)
					+ (prefillLayout == KVLayout.NHD && decodeLayout == KVLayout.NHD ? ""
							: " " + prefillLayout + "->" + decodeLayout);
		}

		/**
		 * 4 layers; MHA with 8 heads (above TP) or 2 heads (below TP 4), or MLA; one draft layer on decode;
		 * {@code hybrid} is the 8-head MHA with two Mamba state tensors of 8 units instead of the state slot.
		 */
		public ModelShape shape() {
			switch (model) {
				case "mha8":
					return new ModelShape(4, 8, 8, 2, 4, false, 1, 64, 32);
				case "mha2":
					return new ModelShape(4, 2, 16, 2, 4, false, 1, 64, 32);
				case "hybrid":
					return new ModelShape(4, 8, 8, 2, 4, false, 1, 64, 32).withMamba(8, 16);
				default:
					return new ModelShape(4, 1, 32, 2, 4, true, 1, 64, 32);
			}
		}

		/** @return whether this is one of the added cells (CP, decode prefix, hybrid state, page sizes, DCP, layouts) */
		public boolean extended() {
			return prefillCp > 1 || !cpTransfer.equals("rank0") || decodePrefix > 0 || model.equals("hybrid")
					|| prefillPage != decodePage || decodeDcp > 1 || prefillLayout != KVLayout.NHD
					|| decodeLayout != KVLayout.NHD;
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
		// Context parallelism: CP {1,2} × all-CP-ranks {off,on}, with TP fan-in, MLA dummies and layer split.
		out.add(new Case(1, 1, "mha8", 1, 1, 1, 1, "all", 0));
		out.add(new Case(1, 1, "mha8", 1, 1, 1, 2, "rank0", 0));
		out.add(new Case(1, 1, "mha8", 1, 1, 1, 2, "all", 0));
		out.add(new Case(2, 1, "mha8", 2, 1, 2, 2, "all", 0));
		out.add(new Case(4, 2, "mla", 1, 1, 1, 2, "rank0", 0));
		out.add(new Case(2, 2, "mla", 1, 1, 1, 2, "layers", 0));
		// Decode prefix: part and full hit, alone and with CP shares.
		out.add(new Case(1, 1, "mha8", 1, 1, 1, 1, "rank0", 0.5));
		out.add(new Case(1, 2, "mha8", 1, 1, 1, 1, "rank0", 1));
		out.add(new Case(2, 1, "mha2", 1, 1, 1, 2, "all", 0.5));
		out.add(new Case(1, 1, "mla", 2, 1, 1, 2, "all", 1));
		// Hybrid model: Mamba state sliced across TP 1→2 and 2→1, then with a prefix.
		out.add(new Case(1, 2, "hybrid", 1, 1, 1));
		out.add(new Case(2, 1, "hybrid", 1, 1, 1));
		out.add(new Case(2, 2, "hybrid", 1, 1, 1, 1, "rank0", 0.5));
		// The layer-wise column, on the cells that stress how decode counts a layer's bytes: head slices from
		// several prefill ranks, replicated heads, MLA's dummy ranks, PP stages into one decode rank and into stages.
		out.add(new Case(4, 1, "mha8", 2, 1, 1, true));
		out.add(new Case(1, 4, "mha2", 2, 2, 1, true));
		out.add(new Case(4, 2, "mha2", 1, 1, 2, true));
		out.add(new Case(2, 4, "mla", 2, 1, 1, true));
		out.add(new Case(4, 2, "mla", 2, 2, 1, true));
		// Layer-wise with CP shares, a decode prefix and Mamba state.
		out.add(new Case(2, 1, "mha8", 1, 1, 1, 2, "all", 0.5, true));
		out.add(new Case(2, 2, "mla", 1, 1, 1, 2, "layers", 0, true));
		out.add(new Case(2, 1, "hybrid", 1, 1, 1, 1, "rank0", 0.5, true));
		out.addAll(repagedCases());
		out.addAll(decodeDcpCases());
		out.addAll(layoutCases());
		return out;
	}

	/**
	 * @return the cells whose prefill and decode order their KV pages differently, each way (NHD to HND and back):
	 *         equal and unequal page sizes, head slices from and to several ranks with heads above and below TP, MLA
	 *         (one latent head: nothing to re-lay), PP, a decode prefix, CP shares and layer-wise sending; and
	 *         head-major pages on both sides cut by token (re-paged, head-sliced), which move head by head as well
	 */
	public static List<Case> layoutCases() {
		List<Case> out = new ArrayList<>();
		KVLayout[][] mixed = { { KVLayout.NHD, KVLayout.HND }, { KVLayout.HND, KVLayout.NHD } };
		for (KVLayout[] l : mixed) {
			out.add(new Case(1, 1, "mha8", 1, 1, 1).withLayouts(l[0], l[1]));
			out.add(new Case(1, 1, "mha8", 1, 1, 1).withPages(16, 4).withLayouts(l[0], l[1]));
			out.add(new Case(1, 1, "mha8", 1, 1, 1).withPages(1, 16).withLayouts(l[0], l[1]));
			out.add(new Case(2, 1, "mha8", 1, 1, 1).withLayouts(l[0], l[1]));
			out.add(new Case(1, 4, "mha8", 2, 1, 1).withLayouts(l[0], l[1]));
			out.add(new Case(1, 4, "mha2", 1, 1, 2).withLayouts(l[0], l[1]));
			out.add(new Case(2, 4, "mha8", 2, 2, 1).withPages(8, 2).withLayouts(l[0], l[1]));
			out.add(new Case(1, 2, "mla", 1, 1, 1).withPages(4, 16).withLayouts(l[0], l[1]));
			out.add(new Case(1, 1, "mha8", 1, 1, 1, 1, "rank0", 0.5).withPages(4, 8).withLayouts(l[0], l[1]));
			out.add(new Case(2, 1, "mha8", 1, 1, 1, 2, "all", 0.5).withLayouts(l[0], l[1]));
			out.add(new Case(4, 1, "mha8", 2, 1, 1, true).withPages(2, 8).withLayouts(l[0], l[1]));
		}
		out.add(new Case(1, 1, "mha8", 1, 1, 1).withPages(16, 4).withLayouts(KVLayout.HND, KVLayout.HND));
		out.add(new Case(2, 4, "mha8", 1, 1, 1).withLayouts(KVLayout.HND, KVLayout.HND));
		out.add(new Case(4, 1, "mha2", 1, 1, 1, true).withPages(1, 8).withLayouts(KVLayout.HND, KVLayout.HND));
		return out;
	}

	/**
	 * @return the cells of decode context parallelism: an MLA prefill at TP 1 (DCP 1) to a decode at DCP 2 and 4
	 *         (decode TP equal to its DCP size), pages of 1 and 16 tokens, with and without a decode prefix, and
	 *         layer-wise
	 */
	public static List<Case> decodeDcpCases() {
		List<Case> out = new ArrayList<>();
		for (int dcp : new int[] { 2, 4 }) {
			for (int page : new int[] { 1, 16 }) {
				for (double prefix : new double[] { 0, 0.5 }) {
					out.add(new Case(1, dcp, "mla", 1, 1, 1, 1, "rank0", prefix).withPages(page, page)
							.withDecodeDcp(dcp));
				}
			}
		}
		out.add(new Case(1, 2, "mla", 1, 1, 1, true).withPages(16, 16).withDecodeDcp(2));
		out.add(new Case(2, 4, "mla", 2, 1, 1, 1, "rank0", 0.5).withPages(4, 4).withDecodeDcp(2));
		return out;
	}

	/**
	 * @return the cells whose prefill and decode page sizes differ: either larger, with head slices from and to
	 *         several ranks, MLA, a decode prefix, CP shares, Mamba state and layer-wise sending
	 */
	public static List<Case> repagedCases() {
		return List.of(new Case(1, 1, "mha8", 1, 1, 1).withPages(1, 16),
				new Case(1, 1, "mha8", 1, 1, 1).withPages(16, 1),
				new Case(1, 1, "mha8", 1, 1, 1).withPages(64, 16),
				new Case(1, 2, "mha8", 1, 1, 1).withPages(1, 16),
				new Case(2, 1, "mha8", 1, 1, 1).withPages(16, 1),
				new Case(2, 4, "mha2", 2, 1, 1).withPages(64, 16),
				new Case(1, 2, "mla", 1, 1, 1).withPages(1, 16),
				new Case(2, 1, "mla", 2, 2, 1).withPages(16, 1),
				new Case(1, 1, "mha8", 1, 1, 1, 1, "rank0", 0.5).withPages(4, 16),
				new Case(2, 1, "mha8", 1, 1, 1, 1, "rank0", 1).withPages(64, 16),
				new Case(2, 1, "mha8", 1, 1, 1, 2, "all", 0.5).withPages(2, 16),
				new Case(1, 2, "hybrid", 1, 1, 1).withPages(16, 4),
				new Case(4, 2, "mha2", 1, 1, 1, true).withPages(1, 16),
				new Case(2, 2, "mla", 1, 1, 1, 2, "layers", 0, true).withPages(16, 2));
	}

	/**
	 * @return a few cells that cover fan-in, fan-out, MLA dummies, PP, CP, a prefix, Mamba state and layer-wise
	 *         sending, to run again with other stripe counts than the default
	 */
	public static List<Case> stripeCases() {
		return List.of(new Case(1, 1, "mha8", 1, 1, 1), new Case(4, 1, "mha8", 2, 1, 2),
				new Case(1, 4, "mla", 2, 2, 1), new Case(2, 1, "mha8", 2, 1, 2, 2, "all", 0.5),
				new Case(2, 1, "hybrid", 1, 1, 1, 1, "rank0", 0.5, true));
	}

	/**
	 * Runs one case with the decode managers' default stripes.
	 *
	 * @return pages moved
	 */
	public static long run(Case c, KVTransport transport, BootstrapClient client, HostPort bootstrap, int rooms) {
		return run(c, transport, client, bootstrap, rooms, DecodeSpec.DEFAULT_STRIPES);
	}

	/**
	 * Runs one case: starts the cluster, moves {@code rooms} rooms, checks every byte, closes the managers.
	 *
	 * @param stripes connections each decode rank opens to each prefill rank
	 * @return pages moved
	 */
	public static long run(Case c, KVTransport transport, BootstrapClient client, HostPort bootstrap, int rooms,
			int stripes) {
		KVCluster cluster = KVCluster.builder().shape(c.shape()).prefill(c.prefillTp(), c.prefillPp(), c.prefillDp())
				.prefillCp(c.prefillCp(), c.cpTransfer().equals("all"), c.cpTransfer().equals("layers"))
				.decodePrefix(c.decodePrefix()).checkUntouched(c.extended()).layerwise(c.layerwise())
				.decode(c.decodeTp(), c.decodePp()).decodeDcp(c.decodeDcp())
				.kvLayouts(c.prefillLayout(), c.decodeLayout()).capacity(96, 8).transport(transport).bootstrapClient(client)
				.pageSizes(c.prefillPage() == 0 ? c.shape().pageSize() : c.prefillPage(),
						c.decodePage() == 0 ? c.shape().pageSize() : c.decodePage())
				.customize(spec -> spec instanceof DecodeSpec d ? d.stripes(stripes) : spec)
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
