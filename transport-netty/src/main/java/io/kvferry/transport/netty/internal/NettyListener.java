package io.kvferry.transport.netty.internal;

import java.util.concurrent.atomic.AtomicBoolean;

import io.kvferry.HostPort;
import io.kvferry.spi.CloseReason;
import io.kvferry.spi.KVTransport;
import io.netty.channel.Channel;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A bound kvferry listener. {@link #dispose()} stops accepting and closes the connections it accepted, without
 * blocking; {@link #onClose} hooks let the transport forget it.
 */
public final class NettyListener implements KVTransport.Listener {

	private static final Logger log = LoggerFactory.getLogger(NettyListener.class);

	private final Channel serverChannel;
	private final HostPort address;
	private final ConnectionRegistry connections;
	private final AtomicBoolean disposed = new AtomicBoolean();

	/**
	 * @param serverChannel the bound server channel
	 * @param address the bound address, with the real port
	 * @param connections the connections this listener accepted
	 */
	public NettyListener(Channel serverChannel, HostPort address, ConnectionRegistry connections) {
		this.serverChannel = serverChannel;
		this.address = address;
		this.connections = connections;
	}

	@Override
	public HostPort address() {
		return address;
	}

	/** @return how many accepted connections are open */
	public int connectionCount() {
		return connections.size();
	}

	/** @return completes when the server channel closed */
	public io.netty.util.concurrent.Future<Void> onClose() {
		return serverChannel.closeFuture();
	}

	@Override
	public void dispose() {
		if (disposed.compareAndSet(false, true)) {
			log.debug("[{}] disposing listener on {}", serverChannel.id().asShortText(), address);
			serverChannel.close();
			connections.closeAll(new CloseReason(CloseReason.Kind.DISPOSED, "listener on " + address + " disposed"));
		}
	}

	@Override
	public boolean isDisposed() {
		return disposed.get();
	}

	@Override
	public String toString() {
		return "NettyListener{" + address + (disposed.get() ? ", disposed" : "") + '}';
	}
}
