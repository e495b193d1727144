package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import io.kvferry.DecodeKVManager;
import io.kvferry.FailureCause;
import io.kvferry.HostPort;
import io.kvferry.KVArgs;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVTransferException;
import io.kvferry.MemoryRegion;
import io.kvferry.ParallelLayout;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.RegionKind;
import io.kvferry.test.InMemoryBootstrap;
import io.kvferry.test.RoguePrefill;
import io.kvferry.transport.local.InMemoryKVTransport;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;

/**
 * Decode's bookkeeping of a room is bounded by the room's items, not by how a peer chunks its writes: the heap a
 * room's ledger takes, measured as the bytes the writing thread allocates (every object the ledger keeps is allocated
 * there, so what it retains is at most that), stays within a constant per item under the worst chunking a header
 * allows, and a peer that cuts an item finer than the ledger keeps fails the room as a protocol error.
 */
class LedgerBoundTest {

	private static final Duration T = Duration.ofSeconds(10);
	// Pages of 4 tokens × 2 heads: the ledger keeps at most 4 × 2 + 1 + 32 = 41 runs per page written in parts.
	private static final int PAGE_SIZE = 4;
	private static final int HEADS = 2;
	private static final int MAX_RUNS = PAGE_SIZE * HEADS + 1 + GrantLedger.SPARE_RUNS;
	private static final int ITEM = 4096;
	private static final int PAGES = 64;
	private static final int BUFFERS = 2;
	// Each item cut into the most runs allowed keeps one object and two int arrays of MAX_RUNS + 2 entries; their growth
	// (doubling from 4) allocated less than twice their final size on the way.
	private static final long PER_ITEM = 3 * 2 * (16 + 4 * (MAX_RUNS + 2)) + 64;

	private static long allocated() {
		return ((com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean())
				.getCurrentThreadAllocatedBytes();
	}

	private static GrantLedger ledger() {
		List<MemoryRegion> kv = new ArrayList<>();
		for (int r = 0; r < BUFFERS; r++) {
			kv.add(MemoryRegion.of(1L << 30, (long) PAGES * ITEM, ITEM));
		}
		KVArgs args = KVArgs.builder().pageSize(PAGE_SIZE).kvHeads(HEADS, HEADS).kvRegions(kv).build();
		int[] pages = new int[PAGES];
		for (int p = 0; p < PAGES; p++) {
			pages[p] = p;
		}
		return GrantLedger.of(args, pages, -1, new int[0][]);
	}

	/** Every item of every buffer in 1-byte chunks at stride 2, {@code chunks} per item: one header each. */
	private static List<DataHeader> everyOtherByte(int chunks, int shift) {
		List<DataHeader> headers = new ArrayList<>();
		for (int r = 0; r < BUFFERS; r++) {
			for (int p = 0; p < PAGES; p++) {
				headers.add(new DataHeader(1, RegionKind.KV, r, (long) p * ITEM + shift, 1, 2, chunks));
			}
		}
		return headers;
	}

	/** @return bytes the calling thread allocated while the ledger recorded and counted {@code headers} */
	private static long write(GrantLedger l, List<DataHeader> headers) {
		long before = allocated();
		for (DataHeader h : headers) {
			l.destination(h);
			l.reserve(h);
			l.landed(h.kind(), h.region(), h.payloadLength());
			l.landedWrite(h);
		}
		return allocated() - before;
	}

	/** @return the refusal, with {@code bytes[0]} the bytes allocated until it; null when every header was recorded */
	private static WriteRefused refused(GrantLedger l, List<DataHeader> headers, long[] bytes) {
		long before = allocated();
		try {
			write(l, headers);
			return null;
		}
		catch (WriteRefused e) {
			return e;
		}
		finally {
			bytes[0] = allocated() - before;
		}
	}

	@Test
	void everyItemCutIntoTheMostRunsAllowedTakesAConstantPerItem() {
		// From byte 1 on, 20 one-byte chunks at stride 2 cut an item into 41 runs: the most allowed.
		List<DataHeader> most = everyOtherByte(MAX_RUNS / 2, 1);
		// Warm up: the first run links every path (string concatenation, class loading) on this thread.
		write(ledger(), most);
		GrantLedger l = ledger();
		long made = allocated();
		GrantLedger fresh = ledger();
		long grant = allocated() - made;
		long bytes = write(l, most);
		int items = BUFFERS * PAGES;
		assertThat(bytes).as("allocated while %d items were each cut into %d runs", items, MAX_RUNS)
				.isLessThanOrEqualTo(PER_ITEM * items);
		assertThat(l.retainedBytes()).as("the ledger's own account")
				.isLessThanOrEqualTo(fresh.retainedBytes() + PER_ITEM * items);
		// Nothing per chunk: the same items in 1-chunk headers allocate the same (the headers were made before).
		GrantLedger again = ledger();
		List<DataHeader> one = new ArrayList<>();
		for (DataHeader h : most) {
			for (int c = 0; c < h.count(); c++) {
				one.add(new DataHeader(1, RegionKind.KV, h.region(), h.dstOffset() + 2L * c, 1, 0, 1));
			}
		}
		assertThat(write(again, one)).as("per-chunk headers").isLessThanOrEqualTo(PER_ITEM * items);
		assertThat(grant).as("a room's ledger before any write").isLessThan(8L * 1024);
	}

	@Test
	void aPeerCuttingAnItemFinerIsRefusedBeforeTheLedgerGrows() {
		long[] bytes = new long[1];
		refused(ledger(), everyOtherByte(ITEM / 2, 0), bytes);
		// The worst chunking a header allows: 1-byte chunks, stride 2, every byte granted and written once.
		WriteRefused e = refused(ledger(), everyOtherByte(ITEM / 2, 0), bytes);
		assertThat(e).isNotNull();
		assertThat(e.getMessage()).isEqualTo("KV item 0 of region 0 was written in pieces that leave it cut into more "
				+ "than " + MAX_RUNS + " runs (this decode rank keeps at most " + MAX_RUNS + " per item: the most its "
				+ "layout lets honest writers make)");
		// The refusal's message included.
		assertThat(bytes[0]).as("allocated until the refusal").isLessThanOrEqualTo(PER_ITEM + 4096);
	}

	@Test
	void aWriteAfterTheOneThatCrossedTheBoundIsRefusedToo() {
		// Another stripe's thread can record a write of the room after the one that crossed the bound and before the
		// refusal failed the room: it must be refused as well, whatever the item's runs look like by then.
		GrantLedger l = ledger();
		DataHeader crossing = new DataHeader(1, RegionKind.KV, 0, 1, 1, 2, MAX_RUNS / 2 + 1);
		l.destination(crossing);
		assertThatThrownBy(() -> l.reserve(crossing)).isInstanceOf(WriteRefused.class)
				.hasMessageContaining("cut into more than " + MAX_RUNS + " runs");
		DataHeader next = new DataHeader(1, RegionKind.KV, 0, ITEM / 2, 1, 0, 1);
		l.destination(next);
		assertThatThrownBy(() -> l.reserve(next)).isInstanceOf(WriteRefused.class);
	}

	@Test
	void aBulkRoomsLedgerTakesAFewBytesPerMegabyteMoved() {
		// The bench's bulk room: 128 pages of 32 KiB in each of 64 buffers (256 MiB), one whole run per buffer.
		int item = 32 << 10;
		List<MemoryRegion> kv = new ArrayList<>();
		for (int r = 0; r < 64; r++) {
			kv.add(MemoryRegion.of(1L << 40, 128L * item, item));
		}
		KVArgs args = KVArgs.builder().pageSize(16).kvHeads(8, 8).kvRegions(kv).build();
		int[] pages = new int[128];
		for (int p = 0; p < pages.length; p++) {
			pages[p] = p;
		}
		List<DataHeader> runs = new ArrayList<>();
		for (int r = 0; r < 64; r++) {
			runs.add(new DataHeader(1, RegionKind.KV, r, 0, 128 * item, 0, 1));
		}
		for (int warm = 0; warm < 100; warm++) {
			write(GrantLedger.of(args, pages, -1, new int[0][]), runs);
		}
		int rooms = 200;
		int incomplete = 0;
		long before = allocated();
		for (int n = 0; n < rooms; n++) {
			GrantLedger l = GrantLedger.of(args, pages, -1, new int[0][]);
			write(l, runs);
			incomplete += l.incomplete() == null ? 0 : 1;
		}
		double perMb = (allocated() - before) / (double) rooms / 256;
		assertThat(incomplete).isZero();
		// A bit per page and buffer where a per-page counter and count took 12 bytes (about 400 B per MB).
		assertThat(perMb).as("heap bytes per MB moved").isLessThan(100);
	}

	@Test
	void finerPiecesFailTheRoomAsAProtocolErrorOverTheTransport() {
		ModelShape shape = new ModelShape(1, HEADS, ITEM / PAGE_SIZE / HEADS / 2, 2, PAGE_SIZE, false, 0, 64, 0);
		RankMemory prefillMem = RankMemory.prefill(shape, ParallelLayout.SINGLE, 8, 4, 0);
		RankMemory decodeMem = RankMemory.decode(shape, ParallelLayout.SINGLE, 8, 4, 0);
		HostPort at = new HostPort("10.0.0.2", 1);
		InMemoryBootstrap bootstrap = new InMemoryBootstrap();
		InMemoryKVTransport transport = InMemoryKVTransport.create();
		DecodeKVManager decode = KVManagerSpec.decode().kvArgs(decodeMem.kvArgs()).transport(transport)
				.bootstrapClient(bootstrap).stripes(1).startNow();
		int len = prefillMem.kvArgs().kvRegions().get(0).itemLen();
		RoguePrefill rogue = RoguePrefill.start(transport, bootstrap, at, prefillMem.kvArgs(), (c, req) -> {
			// Every page of both buffers as even bytes, then odd bytes: no byte twice, every header inside the grant.
			for (int shift = 0; shift < 2; shift++) {
				for (int b = 0; b < 2; b++) {
					for (int page : req.dstPages()) {
						c.send(new DataBlock(new DataHeader(req.room(), RegionKind.KV, b, (long) page * len + shift,
								1, 2, len / 2), prefillMem.kvArgs().kvRegions().get(b).address(), 2));
					}
				}
			}
			c.send(new KVMessage.Status(req.room(), KVPoll.SUCCESS, 0, "", 2L * len * req.dstPages().length,
					KVMessage.NO_CHECKSUM));
		});
		try {
			KVReceiver r = decode.receiver(at, 1);
			r.sendMetadata(new int[] { 2, 3 }, -1, new int[0]);
			StepVerifier.create(r.completion()).expectErrorSatisfies(e -> {
				KVTransferException k = (KVTransferException) e;
				assertThat(k.failureCause()).isEqualTo(FailureCause.PROTOCOL);
				assertThat(k.reason()).contains("cut into more than " + MAX_RUNS + " runs");
			}).verify(T);
		}
		finally {
			decode.disposeNow(T);
			rogue.close();
		}
	}
}
