package io.kvferry.transport.local;

import io.kvferry.spi.CloseReason;
import io.kvferry.spi.KVTransport;
import io.kvferry.test.tck.TransportTck;

/**
 * The transport contract for {@link InMemoryKVTransport}. It has no handshake that could refuse a peer, and it
 * allocates no buffer (data blocks arrive as views of the sender's memory), so its allocator count is always zero and
 * the leak checks rest on the landing zones and the leak detector.
 */
class InMemoryTransportTckTest extends TransportTck {

	@Override
	protected KVTransport createServer() {
		return InMemoryKVTransport.create();
	}

	@Override
	protected KVTransport createClient(KVTransport server) {
		// Listeners live in the transport object: both sides share it, as two ranks of one process do.
		return server;
	}

	@Override
	protected void dispose(KVTransport transport) {
		((InMemoryKVTransport) transport).disconnectAll(new CloseReason(CloseReason.Kind.DISPOSED, "test over"));
	}

	@Override
	protected long allocatedBytes() {
		return 0;
	}

	@Override
	protected long inFlightBound() {
		return 0;
	}
}
