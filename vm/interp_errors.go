package vm

import (
	"errors"
	"fmt"

	"github.com/ncclbpf/ncclbpf/asm"
)

// Errors that compile and run errors of the interpreter wrap; test them with
// errors.Is.
var (
	// ErrInvalidProgram: Compile refused the program.
	ErrInvalidProgram = errors.New("invalid program")
	// ErrMemory: a load, store or atomic touched memory outside every
	// region the interpreter knows of.
	ErrMemory = errors.New("outside any known region")
	// ErrReadOnly: a store or atomic targeted a region that is read-only.
	ErrReadOnly = errors.New("write to read-only memory")
	// ErrMisaligned: an atomic operation on an address that is not a
	// multiple of its width.
	ErrMisaligned = errors.New("misaligned atomic access")
	// ErrBudget: the program executed more instructions than its budget.
	ErrBudget = errors.New("instruction budget exhausted")
	// ErrCallDepth: a BPF-to-BPF call would exceed MaxCallDepth frames.
	ErrCallDepth = errors.New("call depth limit exceeded")
	// ErrUnknownHelper: callx named a helper id that is not in the table.
	ErrUnknownHelper = errors.New("unknown helper")
	// ErrInternal: the interpreter itself failed (a bug): it is reported
	// instead of crashing the process.
	ErrInternal = errors.New("internal interpreter error")
)

// CompileError reports an instruction that the interpreter refuses.
type CompileError struct {
	Program string
	PC      int
	Insn    asm.Instruction
	Reason  string
}

func (e *CompileError) Error() string {
	return fmt.Sprintf("interp: program %q: pc %d (insn %#016x): %s", e.Program, e.PC, e.Insn.Word(), e.Reason)
}

// Unwrap returns ErrInvalidProgram.
func (e *CompileError) Unwrap() error { return ErrInvalidProgram }

// Fault reports a run-time fault: where it happened and why.
type Fault struct {
	Program string
	PC      int
	// Detail says what was attempted ("load of 8 bytes at 0x...").
	Detail string
	// Err is one of the Err* values of this package.
	Err error
}

func (e *Fault) Error() string {
	return fmt.Sprintf("interp: program %q: pc %d: %s: %v", e.Program, e.PC, e.Detail, e.Err)
}

// Unwrap returns the reason.
func (e *Fault) Unwrap() error { return e.Err }
