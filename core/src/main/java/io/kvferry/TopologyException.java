package io.kvferry;

/**
 * Prefill and decode layouts that cannot work together (TP sizes that do not divide, PP combinations SGLang does not
 * support, page sizes or item lengths that differ). The message names both values.
 */
public class TopologyException extends KVFerryException {

	private static final long serialVersionUID = 1L;

	public TopologyException(String message) {
		super(message);
	}
}
