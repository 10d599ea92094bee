// Package verifier proves eBPF programs safe for the hook they attach to
// before any engine runs them: nothing unsafe may reach NCCL.
//
// The API follows go/types: fill a Config (the hook, the maps, limits, an
// optional Source callback for positions) and call Verify; pass an Info
// to receive per-pc abstract states. Verify returns a *Result with
// warnings, or an *Error whose Code is stable (see codes.go) and whose Msg
// says why, from the register or memory state that failed.
//
// # What is proven
//
// Structure (package structure, which every engine shares, and
// structure.go): known opcodes with zero reserved fields, registers r0-r10
// with r10 read-only, jumps inside their function and never into the
// second slot of an LD_IMM64, no fall-through past a function's end, no
// callx, no unreachable instruction, at most MaxInsns slots, no recursion,
// at most MaxCallDepth frames, at most MaxStack bytes of stack summed along
// a call chain. Result.Structure hands the validated structure to the
// engines; Result.Context lists the context fields the program accesses.
//
// Values (value.go, scalar.go, tnum.go: the abstract domain; exec.go,
// mem.go, branch.go, call.go: the per-instruction checks): each register
// and each spilled 8-byte stack slot holds an abstract value: uninitialized,
// a scalar (signed and unsigned intervals plus known bits), or a pointer
// (context, stack of a frame, map handle, map value, map value or null,
// ringbuf record, ringbuf record or null) whose offset is a scalar. Every
// load and store is checked against its region: context accesses must hit
// exactly one declared field at its width with the right access; stack
// accesses stay in [r10-512, r10) and read only initialized bytes; map
// value and ringbuf accesses stay in [0, size) for every possible offset.
// Nullable pointers must be compared with 0 before use, and the check
// propagates to all copies. Pointers never leave the program: they may not
// be stored into maps, ringbuf records or the context, nor returned, nor
// formatted by bpf_printk. Two pointers may be subtracted only when they
// point into the same object (a join keeps the identity of lookups and
// the reference of records), and ordered, or compared with 0, only while
// they lie inside their object (addresses then neither wrap nor reach 0).
// A ringbuf record is used only while the path holds its reference, and
// released exactly once. Maps declared BPF_F_RDONLY_PROG (or .rodata) are
// read-only to programs, BPF_F_WRONLY_PROG write-only. Atomic updates are
// aligned to their width. A hook returning a C int has the low 32 bits of
// r0 checked, which is what every host reads.
//
// Rank uniformity (flow.go): for hooks that Decide (the tuner), two
// runs with the same [uniform] inputs and uniform state but different
// local data (the [local] fields, clocks, random numbers, the thread slot,
// helper return codes, the contents of maps some program writes, per-CPU
// maps) must decide alike. The safety passes gather facts about every run
// (the edges each conditional jump takes, where each pointer points);
// one analysis of the whole control-flow graph then labels every
// register, stack byte and map uniform or local, to a fixed point: what
// any path of a region controlled by a local branch writes is local after
// the branch's immediate post-dominator on every path. A decision output
// or return value that depends on local data, or is written inside such
// a region, is RankDivergent. VerifyTogether verifies a bundle's programs
// together: maps any of them writes (an LRU lookup writes) are local.
//
// # How paths are explored
//
// Verify runs up to three passes, from fast to precise; each is sound, so
// the first that proves the program safe decides, and a rejection reports
// the error of the most precise pass that did not run out of budget.
// Rank uniformity is decided once, on the facts of that pass.
//
//  1. Merged (merged.go): states wait in a queue ordered by pc and all
//     states waiting at one pc are joined (least upper bound) before it
//     runs, so code with many branches is explored about once. Loops
//     still unroll: an iteration comes back to the loop head after the
//     head's earlier states ran and is not joined with them; a state that
//     comes back included in one the head has already seen may loop
//     forever and is rejected.
//  2. Path-sensitive (checker.go): depth-first, forking at conditional
//     jumps whose outcome is unknown and refining operand ranges on each
//     side. At jump targets it stores the states it has seen, with dead
//     registers forgotten; a path whose state is included in a finished
//     one is pruned; a loop whose state at its head repeats one still
//     being explored never terminates (InfiniteLoop). Past a few states
//     per pc, new ones are joined with widening (join.go).
//  3. The same without joins: every path separately.
//
// Loops whose bound is provable (the counter is a known constant in each
// iteration, or its range shrinks) are unrolled until they exit. The work
// is bounded in steps of bounded cost (instructions visited, states
// compared, copied and joined) by Config.Complexity, or by a Budget that
// the programs of one object share: the time a verification takes is
// bounded whatever the program.
//
// The verifier knows nothing about NCCL: hooks are data (package hook).
package verifier
