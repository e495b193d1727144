package io.kvferry.test.rogue;

import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.PayloadSink;
import org.jspecify.annotations.Nullable;

/**
 * A decode rank that does only what it is told.
 */
public final class RogueDecodePeer {

	/** What a rogue decode's link hears from prefill. */
	public interface Inbound {
		void message(RogueLink link, KVMessage message);

		@Nullable PayloadSink data(RogueLink link, DataHeader header);

		void closed(RogueLink link);
	}
}
