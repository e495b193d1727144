package io.kvferry.transport.ucx;

/**
 * What a UCX transport's connections received so far, by path: the payload bytes decode read one-sided from
 * prefill's registered pages, and those that came in active messages (eagerly or by rendezvous).
 *
 * @param bytesRead payload bytes read with UCX gets
 * @param reads gets posted
 * @param bytesInMessages payload bytes received in active messages
 * @param messages active messages received that carried payload
 * @param remoteKeys remote keys the peers announced: one per region of a peer read one-sided, none over active messages
 */
public record UcxStats(long bytesRead, long reads, long bytesInMessages, long messages, long remoteKeys) {
}
