package io.kvferry;

/**
 * The state of one room on one rank, with SGLang's numeric values (they matter: ranks agree on a room's state by taking
 * the minimum, so {@link #FAILED} dominates).
 */
public enum KVPoll {
	FAILED(0),
	BOOTSTRAPPING(1),
	WAITING_FOR_INPUT(2),
	TRANSFERRING(3),
	SUCCESS(4);

	private static final KVPoll[] BY_CODE = values();

	private final int code;

	KVPoll(int code) {
		this.code = code;
	}

	/** @return SGLang's integer for this state */
	public int code() {
		return code;
	}

	/** @return whether this state ends the room ({@link #SUCCESS} or {@link #FAILED}) */
	public boolean isTerminal() {
		return this == SUCCESS || this == FAILED;
	}

	/**
	 * @param code SGLang's integer
	 * @return the state with that number
	 * @throws IllegalArgumentException if no state has it
	 */
	public static KVPoll fromCode(int code) {
		if (code < 0 || code >= BY_CODE.length) {
			throw new IllegalArgumentException("KVPoll code : " + code + " (expected: 0..4)");
		}
		return BY_CODE[code];
	}
}
