package io.kvferry.cli;

import java.util.Locale;

import io.kvferry.harness.ModelShape;
import picocli.CommandLine;
import picocli.CommandLine.Option;

/**
 * The model's KV shape on the command line; defaults are Llama-3-8B's (32 layers, 8 KV heads of 128, bf16, page 16).
 * Prefill and decode must be given the same shape (the transport handshake rejects a mismatch).
 */
final class ModelOptions {

	/** bf16. */
	static final int DTYPE_BYTES = 2;
	/** One aux row (e.g. the first output token and its metadata), as SGLang's metadata buffers. */
	static final int AUX_ITEM_LEN = 64;
	private static final int MHA_HEAD_DIM = 128;
	// DeepSeek-V3's compressed KV: 512 latent + 64 rope elements.
	private static final int MLA_HEAD_DIM = 576;

	@Option(names = "--layers", defaultValue = "32", paramLabel = "N",
			description = "Model layers (default: ${DEFAULT-VALUE}).")
	int layers;

	@Option(names = "--kv-heads", defaultValue = "8", paramLabel = "N",
			description = "KV heads of the model, split across attention TP ranks (default: ${DEFAULT-VALUE}; "
					+ "ignored with --mla).")
	int kvHeads;

	@Option(names = "--head-dim", paramLabel = "N",
			description = "Elements per head, bf16 (default: " + MHA_HEAD_DIM + "; with --mla the latent vector, "
					+ "default " + MLA_HEAD_DIM + ").")
	Integer headDim;

	@Option(names = "--page-size", defaultValue = "16", paramLabel = "TOKENS",
			description = "Tokens per KV page (default: ${DEFAULT-VALUE}).")
	int pageSize;

	@Option(names = "--mla", description = "MLA model: one latent buffer per layer, replicated on every TP rank, "
			+ "instead of K and V buffers.")
	boolean mla;

	@Option(names = "--mamba-state", description = "Hybrid model preset: besides the KV pages, two Mamba state "
			+ "tensors per request (" + MAMBA_UNITS + " units of " + MAMBA_UNIT_BYTES + " B along their TP-sharded "
			+ "dimension), sliced across different prefill and decode TP sizes.")
	boolean mambaState;

	/** Units of the hybrid preset's TP-sharded Mamba state dimension: any TP size up to 64 that divides it works. */
	static final int MAMBA_UNITS = 64;
	static final int MAMBA_UNIT_BYTES = 256;

	/**
	 * @param cl the command, for error reporting
	 * @return the shape
	 * @throws CommandLine.ParameterException naming the bad option
	 */
	ModelShape shape(CommandLine cl) {
		positive(cl, "--layers", layers);
		positive(cl, "--kv-heads", kvHeads);
		positive(cl, "--page-size", pageSize);
		int dim = headDim != null ? headDim : mla ? MLA_HEAD_DIM : MHA_HEAD_DIM;
		positive(cl, "--head-dim", dim);
		if ((dim * DTYPE_BYTES) % 8 != 0) {
			throw new CommandLine.ParameterException(cl, "--head-dim : " + dim + " (expected: a multiple of 4)");
		}
		ModelShape shape = new ModelShape(layers, kvHeads, dim, DTYPE_BYTES, pageSize, mla, 0, AUX_ITEM_LEN, 0);
		return mambaState ? shape.withMamba(MAMBA_UNITS, MAMBA_UNIT_BYTES) : shape;
	}

	static void positive(CommandLine cl, String option, long value) {
		if (value < 1) {
			throw new CommandLine.ParameterException(cl, option + " : " + value + " (expected: >= 1)");
		}
	}

	/** @return e.g. {@code 32 layers, 8 KV heads x 128, bf16, page 16 (32.0 KiB per page per layer buffer)} */
	static String describe(ModelShape s) {
		String heads = s.mla() ? "MLA latent " + s.headDim() : s.kvHeads() + " KV heads x " + s.headDim();
		return String.format(Locale.ROOT, "%d layers, %s, bf16, page %d (%s per page per layer buffer)%s", s.layers(),
				heads, s.pageSize(), Sizes.bytes(s.itemLen(1)), s.mambaUnits() > 0 ? ", two Mamba state tensors" : "");
	}
}
