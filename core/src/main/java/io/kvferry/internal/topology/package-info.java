/**
 * Pure topology arithmetic shared by both sides of a transfer: which prefill ranks a decode rank talks to, how KV
 * regions, pages and attention heads line up between them, and which address a rank advertises.
 */
package io.kvferry.internal.topology;
