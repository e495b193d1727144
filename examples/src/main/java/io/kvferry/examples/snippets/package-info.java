/**
 * Runnable examples, one per documented use of kvferry. Each class has a {@code main} and a static {@code run} that
 * returns what happened; each starts what it needs on 127.0.0.1 with free ports (the bootstrap server embedded) and
 * stops it before returning. README's Java snippets are the regions between {@code // tag::name[]} and
 * {@code // end::name[]} in these files, checked by a test.
 * <ul>
 * <li>{@link io.kvferry.examples.snippets.FirstRoom}: prefill and decode managers moving one room;</li>
 * <li>{@link io.kvferry.examples.snippets.WatchStates}: a room's {@code states()} and a manager's
 * {@code events()};</li>
 * <li>{@link io.kvferry.examples.snippets.ChunkedSends}: a room sent in several {@code send} calls;</li>
 * <li>{@link io.kvferry.examples.snippets.AbortFromDecode}: decode aborts, and what both callers see;</li>
 * <li>{@link io.kvferry.examples.snippets.RoomMetrics}: Micrometer meters of both managers;</li>
 * <li>{@link io.kvferry.examples.snippets.TlsAndSecret}: TLS and a shared secret on the TCP transport;</li>
 * <li>{@link io.kvferry.examples.snippets.EmbeddedBootstrap}: the bootstrap server in the prefill process;</li>
 * <li>{@link io.kvferry.examples.snippets.SecondTurn}: a room from decode back to prefill, for a chat's next
 * turn;</li>
 * <li>{@link io.kvferry.examples.snippets.EncoderToPrefill}: a room of named tensors (multimodal embeddings) from an
 * encoder to prefill.</li>
 * </ul>
 */
package io.kvferry.examples.snippets;
