package io.kvferry.transport.netty.internal;

import java.io.IOException;
import java.nio.channels.SocketChannel;
import java.util.List;

import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.util.internal.SocketUtils;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** A NIO server channel whose accepted channels are {@link LandingNioSocketChannel}s. */
public final class LandingNioServerSocketChannel extends NioServerSocketChannel {

	private static final Logger log = LoggerFactory.getLogger(LandingNioServerSocketChannel.class);

	@Override
	protected int doReadMessages(List<Object> buf) throws Exception {
		SocketChannel accepted = SocketUtils.accept(javaChannel());
		if (accepted == null) {
			return 0;
		}
		try {
			buf.add(new LandingNioSocketChannel(this, accepted));
			return 1;
		}
		catch (RuntimeException e) {
			log.warn("could not make a channel of an accepted socket, closing it: {}", e.toString());
			try {
				accepted.close();
			}
			catch (IOException closing) {
				log.warn("could not close an accepted socket: {}", closing.toString());
			}
			return 0;
		}
	}
}
