package io.kvferry.transport.netty;

/**
 * How a transport's event loops wait for and do socket I/O.
 *
 * <p>A mode that is not available here (an older kernel, a kernel that refuses io_uring, another OS) falls back with
 * its reason logged: {@link #IO_URING} to {@link #EPOLL}, {@link #EPOLL} to {@link #NIO}; unless the mode was asked for
 * as required ({@link NettyKVTransport#ioMode(IoMode, boolean)}), in which case listening and connecting fail naming
 * the reason.
 */
public enum IoMode {

	/** Linux epoll (the default). */
	EPOLL,

	/**
	 * Linux io_uring (Netty's {@code netty-transport-native-io_uring}, kernel 5.14 or later): reads and writes are
	 * submitted to the kernel's rings.
	 */
	IO_URING,

	/** Java NIO: any OS, no native library. */
	NIO;

	/** @return the name used in logs and on the command line: {@code epoll}, {@code io_uring} or {@code nio} */
	public String label() {
		return name().toLowerCase(java.util.Locale.ROOT);
	}
}
