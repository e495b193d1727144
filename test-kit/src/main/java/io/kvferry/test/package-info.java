/**
 * A kit for tests, examples and benchmarks: model shapes, rank memory laid out as SGLang lays it out, verifiable page
 * patterns and a cluster of prefill and decode managers that runs whole rooms and checks every byte.
 */
package io.kvferry.test;
