package io.kvferry.transport.netty.internal;

import java.nio.channels.SocketChannel;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.socket.nio.NioSocketChannel;

/**
 * A NIO socket channel whose reads can scatter: a read handed a {@link ScatterZone} lands the socket's bytes straight
 * in a scatter frame's pieces with one {@code readv}, where Netty would read them into one buffer for decode to copy
 * piece by piece. Every other read is Netty's.
 */
public final class LandingNioSocketChannel extends NioSocketChannel {

	/** A channel that will connect. */
	public LandingNioSocketChannel() {
	}

	/** An accepted channel. */
	LandingNioSocketChannel(Channel parent, SocketChannel socket) {
		super(parent, socket);
	}

	@Override
	protected int doReadBytes(ByteBuf buf) throws Exception {
		if (buf instanceof ScatterZone zone) {
			unsafe().recvBufAllocHandle().attemptedBytesRead(zone.capacityToLand());
			return zone.readFrom(javaChannel());
		}
		return super.doReadBytes(buf);
	}
}
