package io.kvferry.cli;

import io.kvferry.DecodeSpec;
import io.kvferry.KVManagerSpec;
import picocli.CommandLine;
import picocli.CommandLine.Option;

/** How many connections each decode rank opens to each prefill rank. */
final class StripeOptions {

	@Option(names = "--stripes", defaultValue = "" + DecodeSpec.DEFAULT_STRIPES, paramLabel = "N",
			description = "Connections each decode rank opens to each prefill rank; a room's bytes are dealt across "
					+ "them, each on an event loop of its own (1.." + DecodeSpec.MAX_STRIPES
					+ ", default: ${DEFAULT-VALUE}; 1 is one connection).")
	int stripes;

	/** @throws CommandLine.ParameterException naming the range when {@code --stripes} is outside it */
	void validate(CommandLine cl) {
		if (stripes < 1 || stripes > DecodeSpec.MAX_STRIPES) {
			throw new CommandLine.ParameterException(cl, "--stripes : " + stripes + " (expected: 1.."
					+ DecodeSpec.MAX_STRIPES + ")");
		}
	}

	/** @return the spec with these stripes when it is a decode spec, else unchanged */
	KVManagerSpec<?, ?> apply(KVManagerSpec<?, ?> spec) {
		return spec instanceof DecodeSpec d ? d.stripes(stripes) : spec;
	}
}
