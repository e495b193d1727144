package io.kvferry.transport.ucx.internal;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;

import io.kvferry.KVFerryException;
import io.kvferry.MemoryKind;
import io.kvferry.MemoryRegion;
import org.openucx.jucx.ucp.UcpConstants;
import org.openucx.jucx.ucp.UcpContext;
import org.openucx.jucx.ucp.UcpMemMapParams;
import org.openucx.jucx.ucp.UcpMemory;
import org.openucx.jucx.ucs.UcsConstants;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The regions a transport registered with UCX (one {@code ucp_mem_map} per region, not per room), and their packed
 * remote keys, which the listening side hands each connecting peer in the handshake so that it can read blocks of them.
 * A region is registered for remote reads only: on verbs a key then lets a peer read the region, never write it (UCX's
 * TCP and shared-memory transports do not enforce the protection; the connecting side, which receives bytes, opens
 * nothing of its own memory either way). Lookups are lock-free on a snapshot sorted by address.
 */
final class Registrations {

	private static final Logger log = LoggerFactory.getLogger(Registrations.class);

	/** One registered region. */
	record Entry(long base, long length, MemoryKind kind, UcpMemory memory, byte[] key) {

		boolean holds(long address, long bytes) {
			return address >= base && bytes >= 0 && address - base <= length - bytes;
		}
	}

	private final UcpContext context;
	private volatile Entry[] entries = new Entry[0];

	Registrations(UcpContext context) {
		this.context = context;
	}

	/**
	 * Maps each region with UCX (on the caller's thread, which must be the loop's).
	 *
	 * @return the new entries, to {@link #remove} later
	 * @throws KVFerryException when UCX cannot reach a region's memory kind, or refuses the mapping
	 */
	List<Entry> add(List<MemoryRegion> regions) {
		List<Entry> added = new ArrayList<>();
		try {
			for (MemoryRegion r : regions) {
				int type = memoryType(r.kind());
				if (!UcsConstants.MEMORY_TYPE.isMemTypeSupported(context.getMemoryTypesMask(), type)) {
					throw new KVFerryException("UCX here moves no " + r.kind() + " memory (its memory types mask is 0x"
							+ Long.toHexString(context.getMemoryTypesMask()) + ": build UCX with CUDA or ROCm support "
							+ "for device memory): cannot register " + r);
				}
				long t0 = System.nanoTime();
				UcpMemory memory = context.memoryMap(new UcpMemMapParams().setAddress(r.address())
						.setLength(r.length())
						.setMemoryType(type)
						.setProtection(UcpConstants.UCP_MEM_MAP_PROT_LOCAL_READ
								| UcpConstants.UCP_MEM_MAP_PROT_LOCAL_WRITE | UcpConstants.UCP_MEM_MAP_PROT_REMOTE_READ));
				ByteBuffer packed = memory.getRemoteKeyBuffer();
				byte[] key = new byte[packed.remaining()];
				packed.get(key);
				added.add(new Entry(r.address(), r.length(), r.kind(), memory, key));
				log.debug("registered {} with UCX in {} us", r, (System.nanoTime() - t0) / 1000);
			}
		}
		catch (RuntimeException e) {
			added.forEach(Registrations::unmap);
			throw e instanceof KVFerryException ? e : new KVFerryException("UCX could not register memory: " + e, e);
		}
		synchronized (this) {
			List<Entry> all = new ArrayList<>(Arrays.asList(entries));
			all.addAll(added);
			all.sort(Comparator.comparingLong(Entry::base));
			entries = all.toArray(new Entry[0]);
		}
		return added;
	}

	/** Unmaps entries {@link #add} returned (on the loop's thread). */
	void remove(List<Entry> gone) {
		synchronized (this) {
			List<Entry> all = new ArrayList<>(Arrays.asList(entries));
			all.removeAll(gone);
			entries = all.toArray(new Entry[0]);
		}
		gone.forEach(Registrations::unmap);
	}

	/** @return every entry, sorted by address */
	Entry[] all() {
		return entries;
	}

	/** @return the index in {@link #all()} of the entry holding {@code [address, address + bytes)}, or -1 */
	static int find(Entry[] sorted, long address, long bytes) {
		int lo = 0;
		int hi = sorted.length - 1;
		while (lo <= hi) {
			int mid = (lo + hi) >>> 1;
			if (sorted[mid].base <= address) {
				lo = mid + 1;
			}
			else {
				hi = mid - 1;
			}
		}
		return hi >= 0 && sorted[hi].holds(address, bytes) ? hi : -1;
	}

	private static int memoryType(MemoryKind kind) {
		return switch (kind.type()) {
			case HOST -> UcsConstants.MEMORY_TYPE.UCS_MEMORY_TYPE_HOST;
			case CUDA -> UcsConstants.MEMORY_TYPE.UCS_MEMORY_TYPE_CUDA;
			case ROCM -> UcsConstants.MEMORY_TYPE.UCS_MEMORY_TYPE_ROCM;
		};
	}

	private static void unmap(Entry e) {
		try {
			e.memory.deregister();
		}
		catch (RuntimeException ex) {
			log.warn("could not deregister UCX memory at 0x{}: {}", Long.toHexString(e.base), ex.toString());
		}
	}
}
