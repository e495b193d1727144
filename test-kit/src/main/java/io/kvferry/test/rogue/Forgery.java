package io.kvferry.test.rogue;

/**
 * A frame no kvferry peer writes, for a transport that carries bytes: a rogue on such a transport writes it as told; a
 * transport that only carries well-formed messages (the in-memory one) cannot, and says so.
 */
public enum Forgery {
	/** A {@code HELLO_ACK} announcing a lease of 1 ms, below the floor. */
	LEASE_TOO_SHORT,
	/** A {@code HELLO_ACK} announcing a lease of {@code Long.MAX_VALUE} ms, above the ceiling. */
	LEASE_TOO_LONG,
	/** A {@code HELLO_ACK} whose layout lists more KV regions than any layout may. */
	TOO_MANY_REGIONS,
	/** A control frame whose length field stops inside its body's fields. */
	TRUNCATED_CONTROL,
	/** A control frame with bytes after its body's fields. */
	TRAILING_BYTES,
	/** A frame whose length field is past the largest frame the receiver accepts. */
	OVERLONG_FRAME,
	/** A frame of a type the protocol does not have. */
	UNKNOWN_TYPE,
	/** A {@code STATUS} whose status byte is no KVPoll code. */
	BAD_STATUS_CODE,
	/** A data header with a negative chunk length. */
	NEGATIVE_CHUNK,
	/** A data frame whose length field does not match its header's payload. */
	DATA_LENGTH_MISMATCH,
	/** A data header with half its payload, after which the connection closes mid-frame. */
	TRUNCATED_DATA,
	/** A frame whose length field is 0 (no type byte). */
	EMPTY_FRAME
}
