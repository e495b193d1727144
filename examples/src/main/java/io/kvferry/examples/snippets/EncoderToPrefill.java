package io.kvferry.examples.snippets;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.stream.Collectors;

import io.kvferry.DecodeKVManager;
import io.kvferry.FailureCause;
import io.kvferry.HostPort;
import io.kvferry.KVManager;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.KVTransferException;
import io.kvferry.PrefillKVManager;
import io.kvferry.TensorArena;
import io.kvferry.TensorArena.Tensor;
import io.kvferry.TensorPlacement;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.kvferry.spi.NativeMemory;
import io.kvferry.transport.netty.NettyKVTransport;
import io.kvferry.transport.netty.SameHost;
import io.netty.buffer.ByteBuf;

/**
 * A room of tensors that are not KV: an encoder sends a request's multimodal embeddings to prefill (SGLang's EPD).
 * Each side registers a {@link TensorArena} of 1 MiB chunks; the room's three tensors of uneven sizes take whole
 * chunks, scattered over prefill's pool, and move in two sends. Prefill checks every byte, the manifest the room
 * carried, and that its chunks outside the room were not touched.
 */
public final class EncoderToPrefill {

	private static final Duration TIMEOUT = Duration.ofSeconds(30);
	private static final int CHUNK = 1 << 20;
	private static final List<Tensor> EMBEDDINGS = List.of(new Tensor("image_embeds", 5 * CHUNK + 123),
			new Tensor("deepstack_embeds", CHUNK), new Tensor("image_grid_thw", 24));

	private EncoderToPrefill() {
	}

	/**
	 * What arrived on prefill.
	 *
	 * @param intact every tensor's bytes equal the encoder's
	 * @param manifestMatches the manifest the room carried names the tensors prefill expected (else the room failed
	 *        {@link FailureCause#MISMATCH})
	 * @param outsideUntouched prefill's chunks outside the room are still zero
	 * @param sharedMemory the room went through the same-host ring
	 */
	public record Received(boolean intact, boolean manifestMatches, boolean outsideUntouched, boolean sharedMemory) {
	}

	/**
	 * Moves one room of embeddings.
	 *
	 * @param sharedMemory through the same-host ring instead of TCP
	 * @param expected the tensors prefill expects (the encoder sends {@link #EMBEDDINGS})
	 * @return what arrived
	 */
	public static Received run(boolean sharedMemory, List<Tensor> expected) {
		DisposableBootstrapServer bootstrap = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		NettyKVTransport transport = NettyKVTransport.create().sameHost(sharedMemory ? SameHost.AUTO : SameHost.OFF);
		ReactorBootstrapClient client = ReactorBootstrapClient.create();
		TensorArena encoderArena = TensorArena.allocate(16, CHUNK, 4);
		TensorArena prefillArena = TensorArena.allocate(16, CHUNK, 4);
		Random random = new Random(7);
		List<KVManager> started = new ArrayList<>();
		try {
			// tag::encoder-to-prefill[]
			// The encoder sends rooms of tensors; prefill receives them. Both register a chunked arena.
			PrefillKVManager encoder = KVManagerSpec.prefill().kvArgs(encoderArena.kvArgs()).transport(transport)
					.bootstrapClient(client).bootstrapAddress(bootstrap.address())
					.bindAddress(new HostPort("127.0.0.1", 0)).startNow(TIMEOUT);
			DecodeKVManager prefill = KVManagerSpec.decode().kvArgs(prefillArena.kvArgs()).transport(transport)
					.bootstrapClient(client).startNow(TIMEOUT);
			started.addAll(List.of(prefill, encoder));

			// Prefill knows the request's tensors and sizes; its allocator picks chunks, scattered over the pool.
			TensorPlacement in = prefillArena.place(expected, new int[] { 9, 2, 14, 5, 11, 0, 7, 3 }, 1);
			KVReceiver receiver = prefill.receiver(bootstrap.address(), 42);
			in.receive(receiver);      // asks for the chunks and the manifest row; the manifest is checked before Success

			// The encoder writes the embeddings into its own chunks, with the room's manifest, and sends them.
			TensorPlacement out = encoderArena.place(EMBEDDINGS, new int[] { 0, 1, 2, 3, 4, 5, 6, 7 }, 0);
			for (Tensor t : EMBEDDINGS) {
				out.write(t.name(), random(random, t.bytes()));
			}
			out.writeManifest();
			KVSender sender = encoder.sender(42);
			sender.init(out.chunks().length, out.row());
			int[] chunks = out.chunks();
			sender.send(Arrays.copyOfRange(chunks, 0, 6), new int[0]);    // as the encoder finishes them
			sender.send(Arrays.copyOfRange(chunks, 6, 8), new int[0]);

			FailureCause failed = null;
			try {
				receiver.completion().block(TIMEOUT);  // every granted byte landed once, and the tensors are prefill's
			}
			catch (KVTransferException e) {
				failed = e.failureCause();             // MISMATCH: the reason names the first tensor that differs
			}
			// end::encoder-to-prefill[]
			if (failed != null && failed != FailureCause.MISMATCH) {
				throw new IllegalStateException("room 42 failed " + failed);
			}
			boolean manifestMatches = failed == null;
			sender.completion().block(TIMEOUT);
			boolean intact = manifestMatches;
			for (Tensor t : EMBEDDINGS) {
				if (intact && expected.contains(t)) {
					intact = read(out, t).equals(read(in, t));
				}
			}
			return new Received(intact, manifestMatches, zeroOutside(prefillArena, in.chunks()),
					transport.sameHostConnections() > 0);
		}
		finally {
			started.forEach(m -> m.disposeNow(TIMEOUT));
			transport.disposeNow(TIMEOUT);
			client.dispose();
			bootstrap.disposeNow();
		}
	}

	/** @return the tensors the encoder sends */
	public static List<Tensor> embeddings() {
		return EMBEDDINGS;
	}

	private static ByteBuffer random(Random random, long bytes) {
		byte[] b = new byte[(int) bytes];
		random.nextBytes(b);
		return ByteBuffer.wrap(b);
	}

	private static ByteBuffer read(TensorPlacement p, Tensor t) {
		ByteBuffer b = ByteBuffer.allocate((int) t.bytes());
		p.read(t.name(), b);
		return b;
	}

	private static boolean zeroOutside(TensorArena arena, int[] room) {
		Set<Integer> in = Arrays.stream(room).boxed().collect(Collectors.toSet());
		for (int c = 0; c < arena.chunkCount(); c++) {
			if (in.contains(c)) {
				continue;
			}
			ByteBuf chunk = NativeMemory.wrap(arena.chunkAddress(c), arena.chunkBytes());
			try {
				for (int i = 0; i < arena.chunkBytes(); i += 8) {
					if (chunk.getLong(i) != 0) {
						return false;
					}
				}
			}
			finally {
				chunk.release();
			}
		}
		return true;
	}

	/**
	 * Runs the example over TCP.
	 *
	 * @param args none
	 */
	public static void main(String[] args) {
		Received r = run(false, EMBEDDINGS);
		System.out.println("room 42: " + (r.intact() && r.manifestMatches() && r.outsideUntouched()
				? "3 tensors arrived intact, manifest matches" : "mismatch: " + r));
		if (!r.intact() || !r.manifestMatches() || !r.outsideUntouched()) {
			System.exit(1);
		}
	}
}
