package io.kvferry.test;

import io.kvferry.spi.CloseReason;
import io.kvferry.spi.ConnectionHandler;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.PayloadSink;
import org.jspecify.annotations.Nullable;

/** A connection handler that ignores everything; tests override what they need. */
public class NoopConnectionHandler implements ConnectionHandler {

	@Override
	public void onMessage(KVConnection connection, KVMessage message) {
	}

	@Override
	public @Nullable PayloadSink onData(KVConnection connection, DataHeader header) {
		return null;
	}

	@Override
	public void onClose(KVConnection connection, CloseReason reason) {
	}
}
