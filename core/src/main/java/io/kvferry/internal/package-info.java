/**
 * Implementation of kvferry's core: room state tables and the prefill and decode transfer engines (rank planning
 * in {@code io.kvferry.internal.topology}). Internal use only: nothing here is API and it may change in any release.
 */
package io.kvferry.internal;
