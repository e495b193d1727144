package io.kvferry.cli;

import java.time.Duration;

import picocli.CommandLine.Option;

/**
 * Layer-wise streaming on the command line: prefill's compute time per layer, and whether layers go as they are done.
 */
final class LayerwiseOptions {

	@Option(names = "--layerwise", description = "Send each layer of a chunk as soon as prefill computed it "
			+ "(KVSender.sendLayer), so only the last layer's transfer remains after compute.")
	boolean layerwise;

	@Option(names = "--layer-compute", defaultValue = "0", paramLabel = "DURATION",
			description = "Prefill compute time of one model layer, on a timer (e.g. 2ms; default: none).")
	Duration layerCompute;
}
