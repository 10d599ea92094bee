// Package maps implements eBPF maps in native memory and the native helper
// functions that programs call, so that JIT-compiled code, C code (the
// plugin shim) and Go all reach the same data without Go on the hot path.
//
// # Memory
//
// Map memory is mmap'ed outside the Go heap when a map is created, never
// moves, and is released only by an explicit [Map.Close] (there is no
// finalizer: JIT code may hold the map's address without Go knowing).
// Array values are contiguous with a stride of ValueSize rounded up to 8
// ([vm.MapRef].ArrayBase, ArrayStride), so engines may inline lookups and
// 8-byte atomic instructions on values are naturally aligned.
//
// # Map types
//
//   - Array (2): key is a uint32 index; values preallocated and zeroed;
//     delete fails with EINVAL like Linux.
//   - PerCPUArray (6): one copy of every value per slot. There are no CPUs
//     to pin to in a user process, so each OS thread gets a slot on its first
//     helper call: the slot is (n mod [PerCPUSlots]) where n counts the
//     threads seen so far. bpf_get_smp_processor_id returns that slot.
//     Threads beyond PerCPUSlots share slots, so plain read-modify-write on a
//     per-CPU value is exclusive only while fewer threads call helpers;
//     atomic instructions are always safe. From Go, a value is
//     PerCPUSlots values, each ValueSize rounded up to 8 bytes.
//   - Hash (1) and LRUHash (9): preallocated elements, lock-free lookups
//     (per-bucket sequence numbers), updates and deletes under a per-bucket
//     spinlock. A full Hash map refuses inserts (E2BIG); an LRU map evicts
//     its least recently used element (exactly for maps of up to 256
//     entries, among 256 consecutive elements for larger ones). Program
//     lookups and updates count as uses; Go lookups do not (as in Linux,
//     so that dumping a map does not reorder it).
//   - RingBuf (27): MaxEntries bytes (a power of two, page multiple); any
//     number of threads may reserve/submit records; one consumer
//     ([Map.ReadRing]).
//
// # Concurrency guarantees
//
// Lookups, updates and deletes may run on any number of threads at once.
// As with Linux's preallocated maps, a value pointer returned by a lookup
// stays valid memory of the map until the map is closed; if its key is
// deleted meanwhile, the element may be reused for another key (free
// elements are reused oldest first to make that rare). Updating an existing
// key copies the value in place, so atomic adds through a looked-up pointer
// are never lost; a reader may see a value half-way through a concurrent
// update of a multi-word value.
//
// # Helpers
//
// [HelperTable] lists the native helper functions (System V ABI, five
// uint64 arguments) with their prototypes from package helpers. Errors are
// negative errno values, as in Linux. bpf_printk output goes to a log sink
// ([SetLogSinkC], [CapturePrintk]) through a process-wide rate limit
// ([SetPrintkRate]).
//
// The C interface is maps/ncclbpf_maps.h.
package maps
