package io.kvferry.test.rogue;

import java.time.Duration;
import java.util.Objects;

import io.kvferry.HostPort;
import io.kvferry.spi.CloseReason;
import io.kvferry.spi.ConnectionHandler;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.KVTransport;
import io.kvferry.spi.PayloadSink;
import io.kvferry.spi.ScatterBlock;
import io.kvferry.spi.ScatterHeader;
import io.kvferry.spi.SendGate;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;

/**
 * Rogue peers over a transport's SPI: every message and data block a {@link KVConnection} carries, well-formed by
 * construction (a record refuses a field out of its bounds), and no forged frames or silence. A rogue prefill listens
 * ({@link #listen}); a rogue decode dials ({@link #dial}).
 */
public final class SpiRogue {

	private static final Duration T = Duration.ofSeconds(10);

	private SpiRogue() {
	}

	/**
	 * Starts a rogue prefill's listener on {@code transport} (127.0.0.1, port 0).
	 *
	 * @return the listener; dispose it to stop
	 */
	public static KVTransport.Listener listen(KVTransport transport, RoguePrefillPeer peer) {
		KVTransport.Listener listener = transport.listen(new HostPort("127.0.0.1", 0), conn -> {
			Link link = new Link(conn);
			peer.accepted(link);
			return new ConnectionHandler() {
				@Override
				public void onMessage(KVConnection c, KVMessage message) {
					peer.received(link, message);
				}

				@Override
				public @Nullable PayloadSink onData(KVConnection c, DataHeader header) {
					return null;
				}

				@Override
				public void onClose(KVConnection c, CloseReason reason) {
					peer.closed(link);
				}
			};
		}).block(T);
		return Objects.requireNonNull(listener, "listener");
	}

	/**
	 * Dials a prefill rank for a rogue decode.
	 *
	 * @param landing where the rogue decode takes what prefill writes
	 * @return the link, connected
	 */
	public static RogueLink dial(KVTransport transport, HostPort prefill, RogueDecodePeer.Inbound landing) {
		Link[] made = new Link[1];
		KVConnection conn = transport.connect(prefill, new ConnectionHandler() {
			@Override
			public void onMessage(KVConnection c, KVMessage message) {
				landing.message(link(made, c), message);
			}

			@Override
			public @Nullable PayloadSink onData(KVConnection c, DataHeader header) {
				return landing.data(link(made, c), header);
			}

			@Override
			public void onClose(KVConnection c, CloseReason reason) {
				landing.closed(link(made, c));
			}
		}).block(T);
		return link(made, Objects.requireNonNull(conn, "connection"));
	}

	private static synchronized Link link(Link[] made, KVConnection c) {
		if (made[0] == null) {
			made[0] = new Link(c);
		}
		return made[0];
	}

	private static final class Link implements RogueLink {
		private final KVConnection conn;

		Link(KVConnection conn) {
			this.conn = conn;
		}

		@Override
		public String id() {
			return conn.id();
		}

		@Override
		public void send(KVMessage message) {
			conn.send(message);
		}

		@Override
		public void data(DataHeader header, long srcAddress, long srcStride) {
			conn.send(new DataBlock(header, srcAddress, srcStride));
		}

		@Override
		public void scatter(ScatterHeader header, long[] srcAddresses) {
			conn.send(new ScatterBlock(header, srcAddresses, SendGate.OPEN));
		}

		@Override
		public boolean forge(Forgery forgery, long room) {
			return false;
		}

		@Override
		public boolean silence() {
			return false;
		}

		@Override
		public void close() {
			conn.close("rogue peer closes");
		}

		@Override
		public boolean isOpen() {
			return conn.isActive();
		}

		@Override
		public String toString() {
			return conn.id();
		}
	}
}
