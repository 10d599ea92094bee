// Package executable holds what both JIT backends produce: native code in
// a sealed execmem block, called from Go through one C trampoline, with the
// fault word it returns turned into a *FaultError and a map from eBPF pcs to
// native code. Only the instruction encoding differs between
// architectures; the calling convention seen from C (r0 and the fault word
// returned as a pair of 64-bit integers) is the same on both.
package executable

/*
#include <stdint.h>

typedef struct { uint64_t r0; uint64_t fault; } ncclbpf_jit_result;
typedef ncclbpf_jit_result (*ncclbpf_jit_fn)(void *ctx, uint64_t len);

static ncclbpf_jit_result ncclbpf_jit_call(uintptr_t fn, void *ctx, uint64_t len) {
	return ((ncclbpf_jit_fn)fn)(ctx, len);
}

// ncclbpf_jit_loop calls fn n times from C (benchmarks: no cgo cost per call).
static uint64_t ncclbpf_jit_loop(uintptr_t fn, void *ctx, uint64_t len, uint64_t n) {
	uint64_t acc = 0;
	for (uint64_t i = 0; i < n; i++) acc += ((ncclbpf_jit_fn)fn)(ctx, len).r0;
	return acc;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/internal/execmem"
	"github.com/ncclbpf/ncclbpf/vm"
)

// FaultKind says why a compiled program stopped abnormally. The native code
// returns it in the low 8 bits of its fault word, the pc above them.
type FaultKind uint8

// Fault kinds.
const (
	// FaultCallDepth: a BPF-to-BPF call would exceed vm.MaxCallDepth frames.
	FaultCallDepth FaultKind = 1
	// FaultCallx: callx with an id that is not in the program's helper table.
	FaultCallx FaultKind = 2
)

// Sentinel errors, wrapped by *FaultError. They are the interpreter's, so
// errors.Is works alike for every engine.
var (
	// ErrCallDepth (vm.ErrCallDepth): see FaultCallDepth.
	ErrCallDepth = vm.ErrCallDepth
	// ErrUnknownHelper (vm.ErrUnknownHelper): see FaultCallx.
	ErrUnknownHelper = vm.ErrUnknownHelper
	// ErrClosed is returned by Run after Close.
	ErrClosed = errors.New("jit: program closed")
	// ErrWrongArch is returned by Run when the code is for another
	// architecture than the running one (it can still be compiled there,
	// for its size and disassembly).
	ErrWrongArch = errors.New("code for another architecture cannot run on " + runtime.GOARCH)
)

// FaultError is a run-time fault of a compiled program.
type FaultError struct {
	Program string
	PC      int
	Kind    FaultKind
}

func (e *FaultError) Error() string {
	return fmt.Sprintf("jit: program %q: pc %d: %v", e.Program, e.PC, e.Unwrap())
}

// Unwrap returns the sentinel error of e.Kind.
func (e *FaultError) Unwrap() error {
	switch e.Kind {
	case FaultCallDepth:
		return ErrCallDepth
	case FaultCallx:
		return ErrUnknownHelper
	}
	return fmt.Errorf("fault kind %d", e.Kind)
}

// Executable is a compiled program. It implements vm.NativeExecutable.
type Executable struct {
	name  string
	arch  string  // GOARCH of the code
	pcOff []int32 // native offset of each pc, len(insns)+1 entries

	mu    sync.Mutex
	block *execmem.Block
	entry uintptr
	code  []byte
}

// New wraps the sealed block blk holding code for arch (a GOARCH name)
// compiled from the program called name. pcOff is the native offset of
// each pc (len(insns)+1 entries); entryOff[f] is the offset of the
// prologue of the function starting at funcStart[f], which the pc map
// counts as the code of that entry pc.
func New(name, arch string, blk *execmem.Block, pcOff, funcStart, entryOff []int32) *Executable {
	m := append([]int32(nil), pcOff...)
	for f := 1; f < len(funcStart); f++ {
		m[funcStart[f]] = entryOff[f]
	}
	return &Executable{name: name, arch: arch, block: blk, entry: blk.Addr(), pcOff: m, code: blk.Code()}
}

// Build places a program's code: it reserves size bytes near the address
// near (so that direct calls reach it), has emit write the code for the
// reserved address, reserves again when the code outgrew the guess (code
// depends on its address), and seals the block: mapped read-execute, never
// writable again. name is the program's, for errors.
func Build(name string, size int, near uintptr, emit func(base uintptr) ([]byte, error)) (*execmem.Block, error) {
	for attempt := 0; ; attempt++ {
		blk, err := execmem.Reserve(size, near)
		if err != nil {
			return nil, fmt.Errorf("jit: program %q: %w", name, err)
		}
		code, err := emit(blk.Addr())
		if err != nil {
			_ = blk.Free()
			return nil, fmt.Errorf("jit: program %q: %w", name, err)
		}
		if len(code) > blk.Cap() {
			_ = blk.Free()
			if attempt > 3 {
				return nil, fmt.Errorf("jit: program %q: code size %d keeps exceeding its reservation", name, len(code))
			}
			size = len(code) + 4096
			continue
		}
		if err := blk.Seal(code); err != nil {
			_ = blk.Free()
			return nil, fmt.Errorf("jit: program %q: %w", name, err)
		}
		return blk, nil
	}
}

// Entry returns the address of the native entry point (see the backends'
// package doc for its signature); 0 after Close.
func (x *Executable) Entry() uintptr {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.entry
}

// Run executes the program with r1 = &mem[0] (0 when mem is empty) and
// r2 = len(mem). It may be called from several goroutines at once, never
// concurrently with Close.
func (x *Executable) Run(mem []byte) (uint64, error) {
	entry := x.Entry()
	if entry == 0 {
		return 0, ErrClosed
	}
	if x.arch != runtime.GOARCH {
		return 0, fmt.Errorf("jit: program %q: %s code: %w", x.name, x.arch, ErrWrongArch)
	}
	var p unsafe.Pointer
	if len(mem) > 0 {
		p = unsafe.Pointer(&mem[0])
	}
	r := C.ncclbpf_jit_call(C.uintptr_t(entry), p, C.uint64_t(len(mem)))
	if r.fault != 0 {
		return 0, &FaultError{Program: x.name, PC: int(r.fault >> 8), Kind: FaultKind(r.fault & 0xff)}
	}
	return uint64(r.r0), nil
}

// RunLoop calls x's code n times from C and returns the sum of the
// results (benchmarks: no cgo cost per call). Faults are not reported.
func RunLoop(x *Executable, mem []byte, n int) uint64 {
	if x.arch != runtime.GOARCH {
		return 0
	}
	var p unsafe.Pointer
	if len(mem) > 0 {
		p = unsafe.Pointer(&mem[0])
	}
	return uint64(C.ncclbpf_jit_loop(C.uintptr_t(x.Entry()), p, C.uint64_t(len(mem)), C.uint64_t(n)))
}

// Close unmaps the code. The caller guarantees that no thread is running it
// or about to call Entry's address. Close is idempotent.
func (x *Executable) Close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.block == nil {
		return nil
	}
	err := x.block.Free()
	x.block, x.entry, x.code = nil, 0, nil
	if err != nil {
		return fmt.Errorf("jit: program %q: close: %w", x.name, err)
	}
	return nil
}

// Code returns the machine code (read-only memory; nil after Close).
func (x *Executable) Code() []byte {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.code
}

// Range is the native code generated for one eBPF pc: bytes [Start, End)
// from the entry point. The second slot of an LD_IMM64 has an empty range.
type Range struct {
	PC         int
	Start, End int
}

// PCMap returns, for each eBPF pc, the native code range it compiled to.
// Code before the first range is the prologue; code after the last is the
// out-of-line part (common return, fault stubs, callx table).
func (x *Executable) PCMap() []Range {
	out := make([]Range, len(x.pcOff)-1)
	for pc := range out {
		out[pc] = Range{PC: pc, Start: int(x.pcOff[pc]), End: int(x.pcOff[pc+1])}
	}
	return out
}

// Decoder turns code[start:end] into listing lines, one per native
// instruction ("OFFSET: HEX  TEXT"; offsets and branch targets count bytes
// from the entry point). Each backend supplies its architecture's.
type Decoder func(code []byte, start, end int) []string

// Listing writes the eBPF instructions of x's program, each followed by the
// native code it compiled to (decoded by decode), then the out-of-line code.
// insns must be the program x was compiled from.
func (x *Executable) Listing(insns []asm.Instruction, decode Decoder) string {
	code := x.Code()
	if code == nil {
		return "(closed)\n"
	}
	var b strings.Builder
	m := x.PCMap()
	fmt.Fprintf(&b, "; prologue\n")
	for _, l := range decode(code, 0, m[0].Start) {
		fmt.Fprintf(&b, "\t%s\n", l)
	}
	for pc := 0; pc < len(insns) && pc < len(m); {
		text, width := asm.FormatAt(insns, pc)
		fmt.Fprintf(&b, "%d: %s\n", pc, text)
		end := m[min(pc+width, len(m))-1].End
		for _, l := range decode(code, m[pc].Start, end) {
			fmt.Fprintf(&b, "\t%s\n", l)
		}
		pc += width
	}
	fmt.Fprintf(&b, "; out of line: common return, unwind and fault stubs, callx table (%d bytes)\n", len(code)-m[len(m)-1].End)
	for _, l := range decode(code, m[len(m)-1].End, len(code)) {
		fmt.Fprintf(&b, "\t%s\n", l)
	}
	return b.String()
}
