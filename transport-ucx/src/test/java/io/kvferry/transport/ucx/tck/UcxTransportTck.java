package io.kvferry.transport.ucx.tck;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import io.kvferry.spi.KVTransport;
import io.kvferry.test.tck.TransportTck;
import io.kvferry.transport.ucx.UcxKVTransport;

/**
 * The transport contract for {@link UcxKVTransport}; subclasses give the UCX transports and the data path. Each side
 * of a test is a transport of its own (its own UCX context and worker), as two ranks are.
 */
abstract class UcxTransportTck extends TransportTck {

	private final List<UcxKVTransport> made = new ArrayList<>();

	/** @return the configuration both sides of a test use */
	abstract UcxKVTransport configured();

	@Override
	protected KVTransport createServer() {
		return make();
	}

	@Override
	protected KVTransport createClient(KVTransport server) {
		return make();
	}

	private UcxKVTransport make() {
		UcxKVTransport t = configured().handshakeTimeout(Duration.ofSeconds(5));
		made.add(t);
		return t;
	}

	@Override
	protected void dispose(KVTransport transport) {
		((UcxKVTransport) transport).disposeNow(TIMEOUT);
	}

	/** Live bytes of the buffers the test's transports allocated (headers, control messages, bounce buffers). */
	@Override
	protected long allocatedBytes() {
		long sum = 0;
		for (UcxKVTransport t : made) {
			sum += t.allocatedBytes();
		}
		return sum;
	}

	/**
	 * The transport queues descriptors, never copies of a block: a header per active message and a bounce buffer of at
	 * most 1 MiB per block whose sink offers no landing zone.
	 */
	@Override
	protected long inFlightBound() {
		return 2L << 20;
	}
}
