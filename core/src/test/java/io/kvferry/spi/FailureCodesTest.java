package io.kvferry.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.HashSet;
import java.util.Set;

import io.kvferry.FailureCause;
import io.kvferry.KVPoll;
import org.junit.jupiter.api.Test;

/**
 * The wire's failure codes: one fixed number per cause, each read back as its cause; a number without a category or
 * from a later release reads as the peer's failure and never throws; the retry hint is bounded.
 */
class FailureCodesTest {

	@Test
	void everyCauseHasItsOwnFixedCodeAndReadsBackAsItself() {
		Set<Integer> codes = new HashSet<>();
		for (FailureCause cause : FailureCause.values()) {
			int code = FailureCodes.code(cause);
			assertThat(code).as("%s", cause).isBetween(1, FailureCodes.MAX);
			assertThat(codes.add(code)).as("code %d of %s is unique", code, cause).isTrue();
			assertThat(FailureCodes.peerCause(code)).isEqualTo(cause == FailureCause.OTHER ? FailureCause.PEER_FAILED
					: cause);
		}
		// The numbers are the protocol's: changing one breaks every peer of another release.
		assertThat(FailureCodes.code(FailureCause.OVERLOAD)).isEqualTo(11);
		assertThat(FailureCodes.code(FailureCause.DRAINING)).isEqualTo(12);
		assertThat(FailureCodes.code(FailureCause.REQUEUE)).isEqualTo(13);
		assertThat(FailureCodes.code(FailureCause.LEASE_EXPIRED)).isEqualTo(14);
		assertThat(FailureCodes.code(FailureCause.PROTOCOL)).isEqualTo(9);
	}

	@Test
	void aCodeWithoutACategoryOrFromALaterReleaseIsThePeersFailure() {
		for (int code : new int[] { FailureCodes.NONE, 100, 200, FailureCodes.MAX, -1, 256, Integer.MAX_VALUE }) {
			assertThat(FailureCodes.peerCause(code)).as("code %d", code).isEqualTo(FailureCause.PEER_FAILED);
		}
		assertThat(new KVMessage.Status(1, KVPoll.FAILED, 0, "x", 0, -1, 0, 200, 0).cause())
				.isEqualTo(FailureCause.PEER_FAILED);
	}

	@Test
	void codesAndHintsHaveTheirBoundsInEveryMessage() {
		assertThatThrownBy(() -> new KVMessage.Status(1, KVPoll.FAILED, 0, "x", 0, -1, 0, 256, 0))
				.hasMessage("code : 256 (expected: 0..255)");
		assertThatThrownBy(() -> new KVMessage.Abort(1, "x", -1, 0)).hasMessage("code : -1 (expected: 0..255)");
		assertThatThrownBy(() -> new KVMessage.Abort(1, "x", 11, -1))
				.hasMessage("retryAfterMillis : -1 (expected: >= 0)");
		assertThat(new KVMessage.Abort(1, "x", 11, Integer.MAX_VALUE).retryAfterMillis())
				.as("a hint only advises: read as the longest one").isEqualTo(KVMessage.MAX_RETRY_AFTER_MILLIS);
		assertThatThrownBy(() -> new KVMessage.Status(1, KVPoll.SUCCESS, 0, "", 0, -1, 0, 11, 0))
				.hasMessage("status : Success with code=11 retryAfterMillis=0 (expected: 0 and 0)");
		assertThatThrownBy(() -> new KVMessage.Status(1, KVPoll.FAILED, -1, "x"))
				.hasMessage("status : prefillRank=-1 (expected: >= 0)");
		KVMessage.Status overloaded = KVMessage.Status.failed(7, 2, FailureCause.OVERLOAD, "full", 250);
		assertThat(overloaded.cause()).isEqualTo(FailureCause.OVERLOAD);
		assertThat(overloaded.retryAfterMillis()).isEqualTo(250);
		assertThat(new KVMessage.Abort(1, "gave up").cause()).isEqualTo(FailureCause.ABORTED);
	}

	@Test
	void aReasonLongerThanTheBoundIsCutWhereItIsMadeNeverInsideACharacter() {
		String longReason = "é".repeat(KVMessage.MAX_REASON_BYTES);
		for (String reason : new String[] { new KVMessage.Reject(longReason).reason(),
				new KVMessage.Draining(longReason).reason(), new KVMessage.Abort(1, longReason).reason(),
				KVMessage.Status.failed(1, 0, FailureCause.OTHER, longReason, 0).reason() }) {
			assertThat(Texts.utf8Length(reason)).isLessThanOrEqualTo(KVMessage.MAX_REASON_BYTES);
			assertThat(reason).startsWith("éé").endsWith("é...");
		}
		String shortReason = "x".repeat(KVMessage.MAX_REASON_BYTES);
		assertThat(new KVMessage.Reject(shortReason).reason()).isSameAs(shortReason);
		// A pair of surrogates is one character: never cut in two.
		String emoji = "\ud83d\ude00".repeat(KVMessage.MAX_REASON_BYTES / 4 + 1);
		String cut = new KVMessage.Reject(emoji).reason();
		assertThat(cut).endsWith("\ude00...");
		assertThat(Texts.utf8Length(cut)).isLessThanOrEqualTo(KVMessage.MAX_REASON_BYTES);
		// A trace context too long to send is not sent: the room goes untraced on prefill.
		assertThat(new KVMessage.TransferRequest(1, new int[0], -1, new int[0], 1, true,
				"x".repeat(KVMessage.TransferRequest.MAX_TRACE_CONTEXT_BYTES + 1)).traceContext()).isEmpty();
		assertThatThrownBy(() -> new KVMessage.TransferRequest(1, new int[0], -1, new int[0], 0, true))
				.hasMessage("requiredDstInfoNum : 0 (expected: 1..65536)");
	}
}
