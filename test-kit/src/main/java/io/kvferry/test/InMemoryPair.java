package io.kvferry.test;

import java.time.Duration;
import java.util.function.UnaryOperator;

import io.kvferry.DecodeKVManager;
import io.kvferry.DecodeSpec;
import io.kvferry.HostPort;
import io.kvferry.KVManagerSpec;
import io.kvferry.ParallelLayout;
import io.kvferry.PrefillKVManager;
import io.kvferry.PrefillSpec;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.transport.local.InMemoryKVTransport;

/**
 * One prefill and one decode manager, single rank each, over the in-memory transport and bootstrap, with memory of
 * one shape on both sides: the set-up of engine tests that drive rooms by hand. Close it after the test.
 */
public final class InMemoryPair implements AutoCloseable {

	/** The instance's bootstrap address, as decode's receivers name it. */
	public static final HostPort BOOTSTRAP = new HostPort("127.0.0.1", 8998);
	private static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(10);

	/** Prefill's memory; fill a room's pages before sending them. */
	public final RankMemory prefillMemory;
	/** Decode's memory; verify a room's pages after it succeeded. */
	public final RankMemory decodeMemory;
	public final PrefillKVManager prefill;
	public final DecodeKVManager decode;

	private InMemoryPair(RankMemory prefillMemory, RankMemory decodeMemory, PrefillKVManager prefill,
			DecodeKVManager decode) {
		this.prefillMemory = prefillMemory;
		this.decodeMemory = decodeMemory;
		this.prefill = prefill;
		this.decode = decode;
	}

	/**
	 * Starts both managers; decode uses one stripe unless {@code decodeSpec} says otherwise.
	 *
	 * @param shape the model on both sides
	 * @param pages pages of each side's pool
	 * @param prefillSpec adjusts prefill's spec (its memory, transport and bootstrap are set)
	 * @param decodeSpec adjusts decode's spec
	 * @return the running pair
	 */
	public static InMemoryPair start(ModelShape shape, int pages, UnaryOperator<PrefillSpec> prefillSpec,
			UnaryOperator<DecodeSpec> decodeSpec) {
		InMemoryBootstrap bootstrap = new InMemoryBootstrap();
		InMemoryKVTransport transport = InMemoryKVTransport.create();
		RankMemory prefillMemory = RankMemory.prefill(shape, ParallelLayout.SINGLE, pages, 0, 0);
		RankMemory decodeMemory = RankMemory.decode(shape, ParallelLayout.SINGLE, pages, 0, 0);
		PrefillKVManager prefill = prefillSpec.apply(KVManagerSpec.prefill().kvArgs(prefillMemory.kvArgs())
				.transport(transport).bootstrapClient(bootstrap).bootstrapAddress(BOOTSTRAP)
				.bindAddress(new HostPort("127.0.0.1", 0))).startNow();
		DecodeKVManager decode;
		try {
			decode = decodeSpec.apply(KVManagerSpec.decode().kvArgs(decodeMemory.kvArgs()).transport(transport)
					.bootstrapClient(bootstrap).stripes(1)).startNow();
		}
		catch (RuntimeException e) {
			prefill.disposeNow(CLOSE_TIMEOUT);
			throw e;
		}
		return new InMemoryPair(prefillMemory, decodeMemory, prefill, decode);
	}

	@Override
	public void close() {
		try {
			decode.disposeNow(CLOSE_TIMEOUT);
		}
		finally {
			prefill.disposeNow(CLOSE_TIMEOUT);
		}
	}
}
