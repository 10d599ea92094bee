// Package arm64 compiles eBPF programs (vm.Program) to AArch64 machine code,
// for the Arm (Grace) hosts of NCCL systems. It makes the decisions of
// jit/amd64 (see its package doc) with Arm's rules made explicit.
//
// # Entry point
//
// The compiled code is an AAPCS64 function
//
//	struct { uint64_t r0, fault; } fn(void *ctx, uint64_t len);
//
// with eBPF r1 = ctx (x0) and r2 = len (x1); the 16-byte result comes back
// in x0 (r0) and x1 (the fault word: 0, or kind | pc<<8, see FaultKind). C
// callers may declare it `uint64_t fn(void *ctx)`.
//
// # Register map
//
//	eBPF     r0  r1  r2  r3  r4  r5  r6   r7   r8   r9   r10
//	AArch64  x7  x0  x1  x2  x3  x4  x19  x20  x21  x22  x23
//
// r1-r5 are the argument registers, so a helper call is a bare BL (or BLR
// through x16 when the helper is beyond ±128 MiB) followed by "mov x7, x0".
// r6-r10 live in callee-saved registers. x24 holds sp of the outermost
// frame (programs with BPF-to-BPF calls or callx), from which unwinds and
// faults return at any depth. x9-x12, x16 and x17 are scratch.
//
// # Frames
//
// sp is always 16-byte aligned: registers are saved in STP pairs. A program
// of one function saves the frame record (x29, x30) only when it calls
// something, and x19-x24 only for the eBPF registers it names; it
// allocates the 512-byte eBPF stack only when it names r10, and zeroes only
// the registers some path may read before writing them. Programs with
// BPF-to-BPF calls save everything and zero r0, r3-r9; each call's frame
// is 576 bytes (frame record, r6-r9, the caller's r10, 512-byte stack).
// The call depth is checked at run time only when the call graph is cyclic
// or deeper than MaxCallDepth.
//
// # Atomics
//
// Every atomic instruction is sequentially consistent. With FEAT_LSE
// (HWCAP_ATOMICS, read at compile time on the running CPU; Options
// overrides it) they are LDADDAL, LDSETAL, LDCLRAL (with the operand
// inverted), LDEORAL, SWPAL and CASAL; otherwise LDAXR/STLXR loops followed
// by DMB ISH.
//
// # Code memory
//
// The code is copied into a W^X block (internal/execmem) and the data and
// instruction caches are synchronized over it (__builtin___clear_cache:
// DC CVAU, DSB ISH, IC IVAU, DSB ISH, ISB) before Compile returns. Threads
// other than the compiling one must also pass a context-synchronizing
// event before running it; the plugin's slots do that with
// membarrier(PRIVATE_EXPEDITED_SYNC_CORE) before publishing (see
// plugin/grace.c).
//
// Like jit/amd64, the package is an encoder and a lowering of each
// instruction: the analysis before lowering (functions and jump targets
// from package structure, the helper table, loads from frozen read-only
// maps folded to constants, registers read before written) is
// jit/internal/analysis's, the compiled program and its C trampoline
// jit/internal/executable's. The code can be produced on any architecture
// (for its size), but Run refuses to execute it elsewhere (ErrWrongArch).
//
// # Differences from the interpreter
//
// Those of jit/amd64: verified programs are trusted (no bounds checks, no
// instruction budget, eBPF stacks not zeroed, r1-r5 undefined after a
// helper call). Every fault the interpreter reports on programs it accepts
// (callx to an unknown id, call depth) is reported alike; the conformance
// corpora and the differential test check it under qemu-aarch64 (see
// internal/cross).
package arm64
