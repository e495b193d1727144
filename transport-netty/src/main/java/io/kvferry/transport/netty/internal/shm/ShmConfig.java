package io.kvferry.transport.netty.internal.shm;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;

import io.kvferry.transport.netty.SameHost;

/**
 * The same-host settings of a transport: the mode, this host's identity, where rings are created, and their shape.
 *
 * @param mode whether the path is tried
 * @param hostIdentity what identifies this host to a peer (the kernel's boot id), or {@code null} when unknown
 * @param directory where ring files are created and opened (a tmpfs: {@code /dev/shm})
 * @param slots ring slots per connection (1..64)
 * @param slotSize bytes per slot, the largest payload one slot carries
 * @param offerTimeout how long the offering side waits for the answer to its offer before it keeps TCP, or
 *        {@code null} for the transport's handshake timeout
 * @param fallbackLogged whether a fallback to TCP was logged at INFO already (later ones go to DEBUG)
 */
public record ShmConfig(SameHost mode, String hostIdentity, Path directory, int slots, int slotSize,
		Duration offerTimeout, AtomicBoolean fallbackLogged) {

	/** Where the kernel says which boot this is: the same on every process of one host, different on another. */
	public static final Path BOOT_ID = Path.of("/proc/sys/kernel/random/boot_id");

	/** The shared-memory file system of Linux. */
	public static final Path DEFAULT_DIRECTORY = Path.of("/dev/shm");

	/** Most slots per ring (free slots are tracked in one {@code long}). */
	public static final int MAX_SLOTS = 64;
	/** Smallest slot. */
	public static final int MIN_SLOT_SIZE = 4096;
	/** Largest slot (a data frame's payload never exceeds 1 GiB; a slot is far below). */
	public static final int MAX_SLOT_SIZE = 64 << 20;

	/** The path off: no identity read, nothing created. */
	public static final ShmConfig OFF = new ShmConfig(SameHost.OFF, null, DEFAULT_DIRECTORY, 16, 1 << 20, null,
			new AtomicBoolean());

	public ShmConfig {
		Objects.requireNonNull(mode, "mode");
		Objects.requireNonNull(directory, "directory");
		Objects.requireNonNull(fallbackLogged, "fallbackLogged");
		if (slots < 1 || slots > MAX_SLOTS) {
			throw new IllegalArgumentException("sameHost slots : " + slots + " (expected: 1.." + MAX_SLOTS + ")");
		}
		if (slotSize < MIN_SLOT_SIZE || slotSize > MAX_SLOT_SIZE) {
			throw new IllegalArgumentException("sameHost slotSize : " + slotSize + " (expected: " + MIN_SLOT_SIZE
					+ ".." + MAX_SLOT_SIZE + ")");
		}
		if (offerTimeout != null && (offerTimeout.toMillis() < 1 || offerTimeout.toMillis() > Integer.MAX_VALUE)) {
			throw new IllegalArgumentException("sameHost offerTimeout : " + offerTimeout + " (expected: 1 ms.."
					+ Integer.MAX_VALUE + " ms)");
		}
	}

	/**
	 * @return the settings for {@code mode}, with this host's boot id read now (on the caller's thread, never on an
	 *         event loop) and the default ring (16 slots of 1 MiB: 8-16 slots of 1-4 MiB measured alike on a 2-core VM,
	 *         smaller rings were slower)
	 */
	public static ShmConfig of(SameHost mode) {
		if (mode == SameHost.OFF) {
			return OFF;
		}
		return new ShmConfig(mode, readBootId(), DEFAULT_DIRECTORY, OFF.slots, OFF.slotSize, null,
				new AtomicBoolean());
	}

	/** @return a copy that identifies this host as {@code identity} (containers, tests) */
	public ShmConfig withHostIdentity(String identity) {
		return new ShmConfig(mode, identity, directory, slots, slotSize, offerTimeout, new AtomicBoolean());
	}

	/** @return a copy with another ring shape */
	public ShmConfig withRing(int ringSlots, int ringSlotSize) {
		return new ShmConfig(mode, hostIdentity, directory, ringSlots, ringSlotSize, offerTimeout,
				new AtomicBoolean());
	}

	/** @return a copy that creates and opens rings in {@code dir} */
	public ShmConfig withDirectory(Path dir) {
		return new ShmConfig(mode, hostIdentity, dir, slots, slotSize, offerTimeout, new AtomicBoolean());
	}

	/** @return a copy whose offers wait {@code timeout} for their answer instead of the handshake timeout */
	public ShmConfig withOfferTimeout(Duration timeout) {
		return new ShmConfig(mode, hostIdentity, directory, slots, slotSize, timeout, new AtomicBoolean());
	}

	/** @return bytes of one ring file: a header page and the slots */
	public long ringBytes() {
		return Ring.HEADER_BYTES + (long) slots * slotSize;
	}

	private static String readBootId() {
		try {
			return Files.readString(BOOT_ID).trim();
		}
		catch (IOException | RuntimeException e) {
			return null;
		}
	}
}
