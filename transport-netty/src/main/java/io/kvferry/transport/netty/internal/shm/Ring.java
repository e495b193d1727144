package io.kvferry.transport.netty.internal.shm;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Set;
import java.util.regex.Pattern;

import io.kvferry.spi.NativeMemory;
import io.netty.util.internal.PlatformDependent;

/**
 * A staging ring in a memory-mapped file: a header page, then {@code slots} slots of {@code slotSize} bytes. Decode
 * creates it ({@link #create}), prefill maps the same file ({@link #open}); the payload of a data frame goes through a
 * slot instead of the socket.
 *
 * <p>Header: {@code "KVFRSHM1"} (8 bytes), the 16-byte nonce of the offer, {@code i32 slots}, {@code i32 slotSize}.
 * Opening checks the file's size and that its header carries the nonce the offer did: the probe that both processes
 * see the same file, so the same memory.
 *
 * <p>Each side keeps its file open while it maps the ring: the creator holds a lock on it (a process that finds a ring
 * unlocked knows its creator ended, see {@link RingFiles}), and either side can ask the file's size, which a peer may
 * shrink under the mapping ({@link #fileSize}).
 *
 * <p>Slots are addressed by index only; {@link #slotAddress} checks it. Mapping, unmapping and file operations block:
 * they run off the event loops ({@link #fileSize} excepted: one {@code fstat}). Unmapping must wait until no thread
 * reads or writes the ring (the connection's event loop has let go of it).
 */
public final class Ring {

	/** Bytes before the first slot. */
	public static final int HEADER_BYTES = 4096;
	/** Bytes of the nonce an offer carries and the header repeats. */
	public static final int NONCE_BYTES = 16;

	/** The header's first 8 bytes, {@code "KVFRSHM1"}; written last when a ring is created. */
	static final long MAGIC = 0x4B564652_53484D31L;
	/** How ring files are named. */
	static final Pattern NAME = Pattern.compile("kvferry-[0-9a-f]{32}");
	private static final SecureRandom RANDOM = new SecureRandom();

	private final Path path;
	private final byte[] nonce;
	private final int slots;
	private final int slotSize;
	private final MappedByteBuffer map;
	private final FileChannel file;
	private final long base;
	private volatile boolean unmapped;

	private Ring(Path path, byte[] nonce, int slots, int slotSize, MappedByteBuffer map, FileChannel file) {
		this.path = path;
		this.nonce = nonce;
		this.slots = slots;
		this.slotSize = slotSize;
		this.map = map;
		this.file = file;
		this.base = PlatformDependent.directBufferAddress(map);
	}

	/**
	 * Creates a ring file with a fresh name and nonce in the config's directory, readable and writable by this user
	 * only, with every page allocated now (a tmpfs without room fails here with an {@link IOException}, not later
	 * with a fault on first touch), and maps it. Ring files that processes killed before they could unlink them left
	 * in the directory are removed first. Blocks: never on an event loop.
	 */
	public static Ring create(ShmConfig config) throws IOException {
		RingFiles.sweep(config.directory());
		byte[] nonce = new byte[NONCE_BYTES];
		byte[] name = new byte[16];
		RANDOM.nextBytes(nonce);
		RANDOM.nextBytes(name);
		Path path = config.directory().resolve("kvferry-" + HexFormat.of().formatHex(name));
		long size = config.ringBytes();
		RingFiles.created(path);
		FileChannel ch = null;
		try {
			ch = FileChannel.open(path, Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
					StandardOpenOption.WRITE), PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString(
							"rw-------")));
			// Held as long as this process lives (released when the channel closes, or by the kernel when the
			// process dies): the mark of a ring whose creator can still unlink it.
			FileLock lock = ch.tryLock();
			if (lock == null) {
				throw new IOException("ring " + path + " was locked by another process as it was created");
			}
			ByteBuffer zeros = ByteBuffer.allocate((int) Math.min(size, 1 << 20));
			for (long at = 0; at < size;) {
				zeros.clear().limit((int) Math.min(zeros.capacity(), size - at));
				at += ch.write(zeros, at);
			}
			MappedByteBuffer map = ch.map(FileChannel.MapMode.READ_WRITE, 0, size);
			map.put(8, nonce);
			map.putInt(8 + NONCE_BYTES, config.slots());
			map.putInt(12 + NONCE_BYTES, config.slotSize());
			map.putLong(0, MAGIC);
			return new Ring(path, nonce, config.slots(), config.slotSize(), map, ch);
		}
		catch (IOException | RuntimeException e) {
			closeQuietly(ch);
			RingFiles.unlink(path);
			throw e;
		}
	}

	/**
	 * Maps the ring a peer offered, after checking that its name is a ring's in the config's directory, its size is the
	 * offered shape's and its header carries the offered nonce. Blocks: never on an event loop.
	 *
	 * @throws IOException naming what did not match
	 */
	public static Ring open(ShmConfig config, String offeredPath, byte[] nonce, int slots, int slotSize)
			throws IOException {
		Path path = Path.of(offeredPath);
		if (!config.directory().equals(path.getParent()) || !NAME.matcher(path.getFileName().toString()).matches()) {
			throw new IOException("ring path " + offeredPath + " is not a kvferry ring in this side's directory "
					+ config.directory());
		}
		long size = HEADER_BYTES + (long) slots * slotSize;
		FileChannel ch = FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE,
				LinkOption.NOFOLLOW_LINKS);
		try {
			if (ch.size() != size) {
				throw new IOException("ring " + offeredPath + " has " + ch.size() + " bytes (expected: " + size
						+ " for " + slots + " slots of " + slotSize + ")");
			}
			MappedByteBuffer map = ch.map(FileChannel.MapMode.READ_WRITE, 0, size);
			Ring ring = new Ring(path, nonce.clone(), slots, slotSize, map, ch);
			byte[] seen = new byte[NONCE_BYTES];
			map.get(8, seen);
			if (map.getLong(0) != MAGIC || !Arrays.equals(seen, nonce) || map.getInt(8 + NONCE_BYTES) != slots
					|| map.getInt(12 + NONCE_BYTES) != slotSize) {
				ring.unmap();
				throw new IOException("ring " + offeredPath + " does not carry the offered header (another file "
						+ "than the peer's: not the same host or shared-memory namespace)");
			}
			return ring;
		}
		catch (IOException | RuntimeException e) {
			closeQuietly(ch);
			throw e;
		}
	}

	/** @return the file */
	public Path path() {
		return path;
	}

	/** @return the nonce its header carries */
	public byte[] nonce() {
		return nonce.clone();
	}

	public int slots() {
		return slots;
	}

	public int slotSize() {
		return slotSize;
	}

	/** @return bytes the file must have: the header page and every slot */
	public long fileBytes() {
		return HEADER_BYTES + (long) slots * slotSize;
	}

	/**
	 * @return the file's size now: below {@link #fileBytes()} when a process shrank it, and then touching a slot past
	 *         its end faults
	 * @throws IOException when it cannot be read (the file closed with the ring)
	 */
	public long fileSize() throws IOException {
		return file.size();
	}

	/**
	 * @return the address of slot {@code slot}
	 * @throws IndexOutOfBoundsException when it is not a slot of this ring, or the ring is unmapped
	 */
	public long slotAddress(int slot) {
		if (slot < 0 || slot >= slots || unmapped) {
			throw new IndexOutOfBoundsException("slot : " + slot + " (expected: 0.." + (slots - 1)
					+ (unmapped ? ", ring unmapped" : "") + ")");
		}
		return base + HEADER_BYTES + (long) slot * slotSize;
	}

	/**
	 * Unmaps the memory now and closes the file (a creator's lock goes with it); no thread may touch a slot after
	 * this. Idempotent.
	 */
	public void unmap() {
		if (!unmapped) {
			unmapped = true;
			NativeMemory.unmap(map);
			closeQuietly(file);
		}
	}

	private static void closeQuietly(FileChannel ch) {
		if (ch != null) {
			try {
				ch.close();
			}
			catch (IOException e) {
				// Nothing to do: the descriptor is released either way.
			}
		}
	}

	@Override
	public String toString() {
		return "Ring[" + path.getFileName() + ", " + slots + " x " + slotSize + " B]";
	}
}
