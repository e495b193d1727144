/**
 * Striping: one peer rank reached over several transport connections that the role engines see as one connection
 * (joins, per-stripe tallies and fences, abort answers per stripe, closing as one). A new stripe policy touches this
 * package only. Internal use only: nothing here is API and it may change in any release.
 */
package io.kvferry.internal.stripe;
