// Package policybench measures the example policies through the whole
// pipeline — load, verify, JIT-compile, run on each engine — so that
// BENCHMARKS.md can report each stage on real policy code rather than on
// synthetic programs. It has only tests and benchmarks.
package policybench
