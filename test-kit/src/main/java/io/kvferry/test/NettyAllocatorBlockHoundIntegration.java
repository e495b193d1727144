package io.kvferry.test;

import reactor.blockhound.BlockHound;
import reactor.blockhound.integration.BlockHoundIntegration;

/**
 * Tells BlockHound (through {@code META-INF/services}) that Netty 4.2's adaptive allocator may briefly wait on its own
 * lock when several event loops grow its magazine array at once: a lock held for a few instructions, not I/O, which
 * Netty's built-in BlockHound rules do not list yet. Seen under the fuzz test's concurrent load; without it the
 * affected connection is torn down by BlockHound's error. Shipped in kvferry-test so every module's tests get it.
 */
public final class NettyAllocatorBlockHoundIntegration implements BlockHoundIntegration {

	@Override
	public void applyTo(BlockHound.Builder builder) {
		builder.allowBlockingCallsInside("io.netty.buffer.AdaptivePoolingAllocator$MagazineGroup",
				"tryExpandMagazines");
	}
}
