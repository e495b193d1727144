package com.example.kvferry;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class FirstTransferTest {

	@Test
	void everyPageAndTheAuxRowArriveIntact() {
		assertEquals(FirstTransfer.expectedBytes(), FirstTransfer.run());
	}
}
