/**
 * Implementation details of the bootstrap server (route table, request parsing, HTTP handler). Not part of the public
 * API: types here may change in any release without notice.
 */
package io.kvferry.bootstrap.server.internal;
