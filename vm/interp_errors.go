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
	text, _ := asm.FormatAt([]asm.Instruction{e.Insn}, 0)
	return fmt.Sprintf("interp: program %q: pc %d (%s): %s", e.Program, e.PC, text, e.Reason)
}

// Unwrap returns ErrInvalidProgram.
func (e *CompileError) Unwrap() error { return ErrInvalidProgram }

// Fault reports a run-time fault: where it happened and why.
type Fault struct {
	Program string
	PC      int
	// Insn is the disassembly of the instruction at PC.
	Insn string
	// Detail says what was attempted ("load of 8 bytes at 0x...").
	Detail string
	// Err is one of the Err* values of this package.
	Err error
}

func (e *Fault) Error() string {
	if e.Insn == "" {
		return fmt.Sprintf("interp: program %q: pc %d: %s: %v", e.Program, e.PC, e.Detail, e.Err)
	}
	return fmt.Sprintf("interp: program %q: pc %d (%s): %s: %v", e.Program, e.PC, e.Insn, e.Detail, e.Err)
}

// fault builds the Fault of the instruction at pc.
func (x *interpExec) fault(pc int, detail string, err error) *Fault {
	f := &Fault{Program: x.name, PC: pc, Detail: detail, Err: err}
	if pc >= 0 && pc < len(x.insns) {
		f.Insn, _ = asm.FormatAt(x.insns, pc)
	}
	return f
}

// Unwrap returns the reason.
func (e *Fault) Unwrap() error { return e.Err }
