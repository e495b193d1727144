/**
 * Implementation of kvferry's core: room state tables, the prefill and decode transfer engines and the in-memory
 * transport. Internal use only: nothing here is API and it may change in any release.
 */
package io.kvferry.internal;
