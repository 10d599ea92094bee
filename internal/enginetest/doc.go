// Package enginetest runs eBPF programs that use the native maps and
// helpers of package maps on both engines, the interpreter (package vm) and
// the x86-64 JIT (package jit/amd64), and checks what they return and what
// they leave in the maps. Its benchmarks compare map lookups and updates
// from JIT code with the same operation in plain C (BENCHMARKS.md).
//
// The package has no API of its own beyond what its tests use: a context
// layout for the test programs ([Ctx]) and C loops that call a compiled
// program's entry point many times within one cgo call.
package enginetest
