// Package amd64 compiles eBPF programs (vm.Program) to x86-64 machine code.
//
// The package is an encoder and a lowering of each instruction. What it
// knows about a program before lowering it (functions, jump targets, the
// helper table, folded loads, registers read before written) comes from
// jit/internal/analysis, which starts from the structure every engine
// trusts (package structure) and serves jit/arm64 alike; the compiled
// program, its C trampoline, faults and pc map are jit/internal/executable's.
//
// # Entry point
//
// The compiled code is a System V function
//
//	struct { uint64_t r0, fault; } fn(void *ctx, uint64_t len);
//
// with eBPF r1 = ctx (rdi) and r2 = len (rsi). C callers may declare it as
// `uint64_t fn(void *ctx)`: r0 comes back in rax either way, r2 then holds
// whatever the caller left in rsi (hooks that take one context pointer never
// read r2), and the fault word in rdx is simply ignored. fault is 0 after a
// normal exit (every exit path writes it, also in programs that cannot
// fault); otherwise r0 is 0 and fault = kind | pc<<8 (see FaultKind).
// Executable.Run calls fn through a small cgo trampoline and turns a fault
// into a *FaultError.
//
// # Register map
//
//	eBPF  r0  r1  r2  r3  r4  r5  r6  r7  r8  r9  r10
//	x86   rax rdi rsi rdx rcx r8  rbx r13 r14 r15 rbp
//
// r1-r5 are the System V argument registers in order, so a helper call is a
// bare `call`; r6-r9 and r10 live in callee-saved registers, so helpers
// preserve them and nothing is saved around a call. r0 is rax, the return
// register. r9, r10 and r11 are scratch registers of the JIT; r12 holds the
// stack pointer of the outermost frame, from which unwinding helpers and
// faults return at once from any call depth (programs with BPF-to-BPF
// calls or callx; without them every unwind leaves from the outermost
// frame's body, where rsp already points at the frame, and r12 is not
// touched).
//
// # Native stack
//
// Programs run on the caller's stack (NCCL's thread, or the cgo system
// stack for Run). The outermost frame is proportional to what the program
// needs (see mainFrame in frame.go):
//
//   - a program of one function (no BPF-to-BPF call) saves only the
//     callee-saved registers its eBPF registers live in (rbx, r13, r14, r15
//     for r6-r9, rbp for r10: those some instruction names), and r12 only
//     when it uses callx; it allocates the 512-byte eBPF stack only when it
//     names r10, plus 8 bytes where needed to keep rsp 16-byte aligned at
//     helper calls; at most 8 + 48 + 520 = 576 bytes, and a program that
//     names none of r6-r10 and calls nothing has no prologue at all;
//   - a program with BPF-to-BPF calls saves all six (rbp, rbx, r12-r15) and
//     allocates 520 bytes (512-byte eBPF stack, 8 bytes of alignment):
//     8 + 48 + 520 = 576 bytes.
//
// Each BPF-to-BPF call takes 8 + 40 (five saved registers: r6-r9 and the
// caller's r10) + 512 = 560 bytes. With MaxCallDepth = 8 frames the program
// itself uses at most 576 + 7×560 = 4496 bytes, plus what the helpers it
// calls use. The stack pointer is 16-byte aligned at every helper call.
// When the call graph is acyclic and at most MaxCallDepth deep (all
// verified programs) no depth check is emitted; otherwise each BPF-to-BPF
// call checks the depth and faults (FaultCallDepth) like the interpreter.
//
// # Initial registers
//
// The interpreter starts r0 and r3-r9 at 0. The JIT zeroes only those that
// some path may read before writing them (a forward must-analysis of the
// defined registers over the control-flow graph; a helper call or callx
// reads r1-r5, exit reads r0), so the entry values of the others can never
// be observed. Programs with BPF-to-BPF calls zero all eight.
//
// # Compilation
//
// One pass over the instructions appends code to a byte slice (emitters are
// named by x86 form, see encoder.go) while recording the native offset of
// every pc; forward jumps and calls go through a fix-up table patched at the
// end. Fault and unwind paths are emitted out of line after the program, then
// the callx dispatch table (nothing out of line when the program has no
// unwinding helper call, no fault site and no callx). The code is copied into a W^X block
// (internal/execmem) reserved near the helpers so that helper calls are
// direct rel32 calls when in reach (else mov rax, imm64; call rax).
//
// Loads from frozen, program-read-only arrays (vm.MapRef.Frozen and
// ReadOnly: libbpf's .rodata, whose volatile const tunables a policy reads
// on every call) are read at compile time: "lddw rX, map_value(i)+off"
// followed, on straight-line code with rX unchanged, by "ldx rY, [rX+k]"
// inside one value becomes "mov rY, value" (sign-extended for ldxs), and the
// lddw disappears when nothing else reads rX (the analysis, shared with
// jit/arm64, is jit/internal/analysis's). A store by an unverified program
// into such a map is not seen by folded loads.
//
// # Differences from the interpreter
//
// The JIT runs verified programs and checks nothing the verifier proves:
// memory accesses are not bounds-checked (an unverified program can crash
// the process), misaligned atomics and stores to read-only maps
// (vm.MapRef.ReadOnly) are not trapped, there is no instruction budget,
// eBPF stacks are not zeroed on entry, and r1-r5 hold whatever the helper
// left after a helper call (the interpreter keeps them; programs may not
// read them). Everything else, including every fault the interpreter
// reports on programs it accepts (callx to an unknown id, call depth), and
// the set of programs it refuses, is the same: the conformance corpus and
// the differential tests (jit/internal/jittest) check it.
//
// # Lifetime
//
// Close unmaps the code. The caller must guarantee that no thread is inside
// the code or about to enter it (the hook-slot layer publishes a new
// pointer, then waits for quiescence before closing the old program).
package amd64
