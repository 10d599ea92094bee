package arm64

import "github.com/ncclbpf/ncclbpf/jit/internal/executable"

// FaultKind says why a compiled program stopped abnormally. The native code
// returns it in the low 8 bits of its fault word, the pc above them.
type FaultKind = executable.FaultKind

// Fault kinds.
const (
	// FaultCallDepth: a BPF-to-BPF call would exceed MaxCallDepth frames.
	FaultCallDepth = executable.FaultCallDepth
	// FaultCallx: callx with an id that is not in the program's helper table.
	FaultCallx = executable.FaultCallx
)

// Sentinel errors, wrapped by *FaultError. They are the interpreter's, so
// errors.Is works alike for every engine.
var (
	// ErrCallDepth (vm.ErrCallDepth): see FaultCallDepth.
	ErrCallDepth = executable.ErrCallDepth
	// ErrUnknownHelper (vm.ErrUnknownHelper): see FaultCallx.
	ErrUnknownHelper = executable.ErrUnknownHelper
	// ErrClosed is returned by Run after Close.
	ErrClosed = executable.ErrClosed
	// ErrWrongArch is returned by Run on a CPU that is not AArch64 (the code
	// can still be compiled there, for its size and disassembly).
	ErrWrongArch = executable.ErrWrongArch
)

// FaultError is a run-time fault of a compiled program.
type FaultError = executable.FaultError

// Range is the native code generated for one eBPF pc: bytes [Start, End)
// from the entry point. The second slot of an LD_IMM64 has an empty range.
type Range = executable.Range

// Executable is a compiled program: Run, Entry, Close, Code and PCMap (the
// native range of each eBPF pc). It implements vm.NativeExecutable.
type Executable struct{ *compiled }

// compiled is the architecture-independent part of an Executable.
type compiled = executable.Executable
