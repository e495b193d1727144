package io.kvferry.internal;

import io.kvferry.ProtocolException;

/** A write a room's grant or ledger does not allow; its message names the field or item. Stackless. */
final class WriteRefused extends ProtocolException {

	private static final long serialVersionUID = 1L;

	WriteRefused(String reason) {
		super(reason);
	}

	@Override
	public synchronized Throwable fillInStackTrace() {
		return this;
	}
}
