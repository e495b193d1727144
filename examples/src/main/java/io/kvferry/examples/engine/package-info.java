/**
 * A tiny transformer served disaggregated: prefill on one instance, decode on another, the KV cache moved by kvferry.
 * It shows how an engine's cache and scheduler loop map onto kvferry's names; every call into kvferry's manager API
 * is in {@link io.kvferry.examples.engine.KVFerryLink}.
 *
 * <h2>The cache is the registered memory</h2>
 * <ul>
 * <li><b>Regions.</b> Each TP rank's pool ({@link io.kvferry.examples.engine.RankKVCache}) has per layer one K and one
 * V buffer, {@code [pages][pageSize][kvHeadsOfThisRank][headDim]}. Each buffer is one
 * {@link io.kvferry.MemoryRegion} whose item is one page of that buffer. An engine with its own pool describes it
 * with {@code MemoryRegion.of(address, length, itemLen)} instead of allocating.</li>
 * <li><b>KVArgs.</b> {@code kvRegions}: the K buffers of all layers, then the V buffers; {@code pageSize};
 * {@code kvHeads(heads of this rank, heads of the model)}, which is what lets kvferry slice heads between instances of
 * different TP sizes; a {@code dtype} tag both sides must share. A rank holds the heads
 * {@link io.kvferry.examples.engine.HeadLayout} gives, the rule kvferry's head slicing assumes.</li>
 * <li><b>Page indices.</b> A request's {@link io.kvferry.examples.engine.PageTable} lists its pages in token order;
 * those indices, not addresses, go to kvferry. The same indices apply to every layer buffer and every TP rank. Prefill
 * and decode use their own indices; kvferry maps one list onto the other.</li>
 * <li><b>Aux rows.</b> One row per request in flight, registered as an aux region: prefill writes the first sampled
 * token and the room into it before its last send; decode trusts a landed row only when the room matches.</li>
 * </ul>
 *
 * <h2>The scheduler loop</h2>
 * <ul>
 * <li>Decode ({@link io.kvferry.examples.engine.DecodeWorker}): on admission allocate pages and an aux row, then
 * {@code receive} (receiver and {@code sendMetadata}). In the loop take the rooms whose state stream reached Success,
 * check the aux row, free it, add the request to the running batch and decode from the landed KV; on Failed abort and
 * free the pages only once the abort completes.</li>
 * <li>Prefill ({@link io.kvferry.examples.engine.PrefillWorker}): allocate pages and an aux row, {@code send}
 * (sender and {@code init}), run the prompt in chunks and after each chunk send the pages it completed; write the aux
 * row before the last send; free pages and row when the room completes, never before.</li>
 * <li>State: each room's {@code states()} is a hot stream starting with the current state. Across an instance's
 * ranks the room's state is the minimum (SGLang's all-reduce), so one failed rank fails the request.</li>
 * </ul>
 *
 * <h2>Threading</h2>
 * kvferry calls back on its transport threads: do nothing there but hand the room to the scheduler (a queue here).
 * The scheduler thread owns the page tables and every read and write of the cache; it may block waiting for a room
 * when it has nothing else to do, bounded.
 */
package io.kvferry.examples.engine;
