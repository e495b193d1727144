package io.kvferry.internal;

import java.nio.ByteBuffer;
import java.util.zip.CRC32C;

import io.kvferry.spi.NativeMemory;
import io.kvferry.spi.KVMessage;

/**
 * What one room moved on one connection: payload bytes and, when asked for, a CRC32C of them in stream order. Prefill
 * tallies what it hands to the transport, decode what landed; a Success carries prefill's tally and decode compares.
 * Bytes are read from native memory through one reusable view, never copied.
 *
 * <p>Not thread-safe: one connection's thread (or the room's monitor) feeds it.
 */
final class Tally {

	private final CRC32C crc;
	private ByteBuffer view;
	private long bytes;

	/** @param checksum whether to compute a CRC32C too */
	Tally(boolean checksum) {
		this.crc = checksum ? new CRC32C() : null;
	}

	/** Adds {@code length} bytes at {@code address} to the checksum (in stream order); counts nothing. */
	void checksum(long address, int length) {
		if (crc != null && length > 0) {
			view = NativeMemory.retarget(view, address, length);
			crc.update(view);
		}
	}

	/** Counts bytes whose checksum was taken. */
	void count(long n) {
		bytes += n;
	}

	long bytes() {
		return bytes;
	}

	/** @return the CRC32C so far, or {@link KVMessage#NO_CHECKSUM} when none is computed */
	long checksum() {
		return crc == null ? KVMessage.NO_CHECKSUM : crc.getValue();
	}
}
