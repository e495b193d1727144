package io.kvferry.bootstrap.server.internal;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.netty.NettyPipeline;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link RequestReadTimeout} on an {@link EmbeddedChannel} with Netty's HTTP codec, on a frozen clock: the timer runs
 * from a request's first byte to its last, whatever the pace of the bytes in between.
 */
class RequestReadTimeoutTest {

	private static final Duration TIMEOUT = Duration.ofSeconds(1);
	private static final String GET = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
	private static final String TIMEOUT_ANSWER = "HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\n"
			+ "connection: close\r\n\r\n";

	private EmbeddedChannel channel;

	@BeforeEach
	void channel() {
		channel = new EmbeddedChannel();
		channel.freezeTime();
		channel.pipeline().addLast(NettyPipeline.HttpCodec, new HttpServerCodec());
		RequestReadTimeout.install(channel.pipeline(), TIMEOUT);
	}

	@AfterEach
	void finish() {
		channel.finishAndReleaseAll();
	}

	@Test
	void installsOneHandlerOnEachSideOfTheCodec() {
		assertThat(channel.pipeline().names()).containsSubsequence(RequestReadTimeout.BYTES_HANDLER,
				NettyPipeline.HttpCodec, RequestReadTimeout.MESSAGES_HANDLER);
	}

	@Test
	void aHeadTrickledTooSlowlyIsAnswered408AndClosed() {
		String head = "GET /health HTTP/1.1\r\nHost: x\r\n";
		for (int i = 0; i < head.length() && channel.isOpen(); i++) {
			// 100 ms per byte: each byte would reset an idle timeout, but not this one.
			feed(head.substring(i, i + 1));
			elapse(Duration.ofMillis(100));
		}
		assertThat(channel.isOpen()).isFalse();
		assertThat(readAnswer()).isEqualTo(TIMEOUT_ANSWER);
		assertThat((Object) channel.readInbound()).isNull();
	}

	@Test
	void aRequestSentByteByByteInTimeIsPassedOnAndNotTimedOut() {
		for (int i = 0; i < GET.length(); i++) {
			feed(GET.substring(i, i + 1));
			elapse(Duration.ofMillis(10));
		}
		assertRequestDecoded();
		elapse(Duration.ofSeconds(10));
		assertThat(channel.isOpen()).isTrue();
		assertThat((Object) channel.readOutbound()).isNull();
	}

	@Test
	void aConnectionThatSendsNothingIsLeftToTheIdleTimeout() {
		elapse(Duration.ofSeconds(10));
		assertThat(channel.isOpen()).isTrue();
		assertThat((Object) channel.readOutbound()).isNull();
	}

	@Test
	void timeBetweenRequestsDoesNotCountButTheNextRequestsFirstByteStartsTheClock() {
		feed(GET);
		assertRequestDecoded();
		elapse(Duration.ofSeconds(30));
		assertThat(channel.isOpen()).isTrue();

		feed("GET /health HT");
		elapse(TIMEOUT.minusMillis(1));
		assertThat(channel.isOpen()).isTrue();
		elapse(Duration.ofMillis(1));
		assertThat(channel.isOpen()).isFalse();
		assertThat(readAnswer()).isEqualTo(TIMEOUT_ANSWER);
	}

	@Test
	void aRequestStartedJustBeforeTheLastOnesTimeWasUpGetsAllOfItsOwn() {
		feed(GET);
		assertRequestDecoded();
		elapse(TIMEOUT.minusMillis(100));
		feed("GET /health HT");
		// The check scheduled for the first request comes now, while the second is being read.
		elapse(Duration.ofMillis(100));
		assertThat(channel.isOpen()).isTrue();
		elapse(TIMEOUT.minusMillis(101));
		assertThat(channel.isOpen()).isTrue();
		elapse(Duration.ofMillis(1));
		assertThat(channel.isOpen()).isFalse();
		assertThat(readAnswer()).isEqualTo(TIMEOUT_ANSWER);
	}

	@Test
	void manyRequestsOnOneConnectionShareOneScheduledCheck() {
		feed(GET);
		assertRequestDecoded();
		ScheduledFuture<?> first = scheduledCheck();
		for (int i = 0; i < 5; i++) {
			elapse(Duration.ofMillis(10));
			feed(GET);
			assertRequestDecoded();
			assertThat((Object) scheduledCheck()).isSameAs(first);
		}
	}

	@Test
	void aBodyThatStopsHalfwayIsTimedOutToo() {
		feed("PUT /route HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n{\"a\"");
		HttpRequest head = channel.readInbound();
		assertThat(head.uri()).isEqualTo("/route");
		ReferenceCountUtil.release(channel.readInbound());
		elapse(TIMEOUT);
		assertThat(channel.isOpen()).isFalse();
		assertThat(readAnswer()).isEqualTo(TIMEOUT_ANSWER);
	}

	@Test
	void aCompleteBodyStopsTheClock() {
		feed("PUT /route HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{");
		elapse(TIMEOUT.minusMillis(1));
		feed("}");
		elapse(Duration.ofSeconds(10));
		assertThat(channel.isOpen()).isTrue();
		assertThat((Object) channel.readOutbound()).isNull();
		Object message;
		while ((message = channel.readInbound()) != null) {
			ReferenceCountUtil.release(message);
		}
	}

	@Test
	void refusesAPipelineWithoutTheHttpCodecAndABadTimeout() {
		EmbeddedChannel bare = new EmbeddedChannel();
		try {
			assertThatThrownBy(() -> RequestReadTimeout.install(bare.pipeline(), TIMEOUT))
					.isInstanceOf(IllegalStateException.class)
					.hasMessageContaining(NettyPipeline.HttpCodec);
			assertThatThrownBy(() -> RequestReadTimeout.install(channel.pipeline(), Duration.ZERO))
					.hasMessage("timeout : PT0S (expected: > 0)");
		}
		finally {
			bare.finishAndReleaseAll();
		}
	}

	private ScheduledFuture<?> scheduledCheck() {
		ScheduledFuture<?> check = RequestReadTimeout.scheduledCheck(channel.pipeline());
		assertThat((Object) check).as("the scheduled check").isNotNull();
		return check;
	}

	private void feed(String bytes) {
		channel.writeInbound(Unpooled.copiedBuffer(bytes, StandardCharsets.US_ASCII));
	}

	private void elapse(Duration time) {
		channel.advanceTimeBy(time.toNanos(), TimeUnit.NANOSECONDS);
		channel.runScheduledPendingTasks();
	}

	private void assertRequestDecoded() {
		HttpRequest request = channel.readInbound();
		assertThat(request.uri()).isEqualTo("/health");
		Object last = channel.readInbound();
		assertThat(last).isInstanceOf(LastHttpContent.class);
		ReferenceCountUtil.release(last);
	}

	private String readAnswer() {
		ByteBuf answer = channel.readOutbound();
		try {
			return answer.toString(StandardCharsets.US_ASCII);
		}
		finally {
			answer.release();
		}
	}
}
