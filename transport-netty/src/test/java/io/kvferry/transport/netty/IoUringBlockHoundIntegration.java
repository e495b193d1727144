package io.kvferry.transport.netty;

import reactor.blockhound.BlockHound;
import reactor.blockhound.integration.BlockHoundIntegration;

/**
 * Tells BlockHound (through {@code META-INF/services}) that Netty's io_uring event loop spins for a moment while it
 * closes its ring, after the loop stopped taking tasks: the wake-up gate waits for the kernel to finish the last
 * submissions. Not a kvferry path and not I/O a loop waits on while serving; without this the loop thread dies in its
 * own cleanup. Of the modules whose tests run BlockHound, only this one puts io_uring on the class path.
 */
public final class IoUringBlockHoundIntegration implements BlockHoundIntegration {

	@Override
	public void applyTo(BlockHound.Builder builder) {
		builder.allowBlockingCallsInside("io.netty.channel.uring.IoUringIoHandler", "closeWakeupGate");
	}
}
