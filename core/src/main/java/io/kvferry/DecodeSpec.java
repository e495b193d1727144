package io.kvferry;

import io.kvferry.internal.KVManagers;
import reactor.core.publisher.Mono;

/**
 * The spec of a decode rank's manager. It finds prefill instances through the bootstrap address each receiver names.
 * Made by {@link KVManagerSpec#decode()}; immutable.
 */
public final class DecodeSpec extends KVManagerSpec<DecodeSpec, DecodeKVManager> {

	DecodeSpec(KVManagerConfig config) {
		super(config);
	}

	@Override
	DecodeSpec with(KVManagerConfig config) {
		return new DecodeSpec(config);
	}

	/**
	 * Asks every prefill rank for a CRC32C of each room's bytes with its Success, and fails a room whose bytes that
	 * landed have another checksum. Without it a Success is still checked against the byte count that landed; the
	 * checksum adds a read of every landed byte here and of every sent byte on prefill.
	 *
	 * @param checksums default false
	 * @return a new spec
	 */
	public DecodeSpec checksums(boolean checksums) {
		return edit(d -> d.checksums = checksums);
	}

	@Override
	void validate(KVManagerConfig c) {
		super.validate(c);
		if (c.layout().attnCpSize() != 1) {
			throw new IllegalStateException("layout : attn_cp_size=" + c.layout().attnCpSize()
					+ " on decode (expected: 1; context parallelism is a prefill-only dimension)");
		}
	}

	@Override
	Mono<DecodeKVManager> start(KVManagerConfig config) {
		return KVManagers.decode(config);
	}
}
