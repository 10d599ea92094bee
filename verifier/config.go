package verifier

import (
	"errors"
	"fmt"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/helpers"
	"github.com/ncclbpf/ncclbpf/hook"
)

// Map types the verifier knows (Linux's enum bpf_map_type numbering).
const (
	MapTypeHash          uint32 = 1
	MapTypeArray         uint32 = 2
	MapTypePercpuHash    uint32 = 5
	MapTypePercpuArray   uint32 = 6
	MapTypeLRUHash       uint32 = 9
	MapTypeLRUPercpuHash uint32 = 10
	MapTypeRingBuf       uint32 = 27
)

// Default limits, used when the Config field is zero.
const (
	// DefaultMaxInsns is the longest program accepted, in slots.
	DefaultMaxInsns = 65536
	// DefaultMaxCallDepth is the deepest chain of frames: the entry
	// program plus 7 nested BPF-to-BPF calls.
	DefaultMaxCallDepth = 8
	// DefaultMaxStack is the budget for the stacks of all frames on one
	// call chain. Each frame owns a 512-byte stack below its r10, and the
	// bytes a subprogram uses are the deepest offset it touches rounded up
	// to 8; the sum along any chain of calls must stay within MaxStack.
	DefaultMaxStack = 512 * DefaultMaxCallDepth
	// DefaultComplexity is the instruction-visit budget.
	DefaultComplexity = 1_000_000
)

// MapInfo describes one map the program refers to. LD_IMM64 with
// Src=asm.PseudoMapFD or asm.PseudoMapValue has Imm = index into
// Config.Maps.
type MapInfo struct {
	Name       string
	Type       uint32
	KeySize    uint32
	ValueSize  uint32
	MaxEntries uint32
	// ReadOnly maps (.rodata) may be read but not written by programs.
	ReadOnly bool
}

// Config says what to verify against. A Config is not modified by
// Verify and may be used by several goroutines at once.
type Config struct {
	// Hook is the attachment point: r1 points to its Context at entry,
	// helper calls must be in Hook.Helpers and r0 at exit in Hook.Return.
	// When Hook.Return lies within int32, the program returns a C int: the
	// low 32 bits of r0, read as signed, must be in the range (clang
	// writes "return -1" as w0 = -1); otherwise all 64 bits must be.
	Hook *hook.Hook
	// Maps are the maps LD_IMM64 instructions refer to, by index.
	Maps []MapInfo
	// Protos adds helper prototypes to those of package helpers (for test
	// helpers); a helper must still be allowed by the hook.
	Protos map[helpers.ID]*helpers.Proto
	// MaxInsns, MaxCallDepth, MaxStack and Complexity are limits; zero
	// means the Default of the same name.
	MaxInsns     int
	MaxCallDepth int
	MaxStack     int
	Complexity   int
	// Source, when set, locates a pc in the C source for error messages;
	// line <= 0 means unknown.
	Source func(pc int) (file string, line, col int, text string)
}

// Info receives optional detail about a verification. Set the fields you
// want before calling Verify; nil fields are not filled.
type Info struct {
	// States, when non-nil, receives for each pc the abstract pre-states
	// seen there (at most 4 per pc), one line each.
	States map[int][]string
}

// Result is what a successful verification found.
type Result struct {
	// Warnings are problems that do not make the program unsafe
	// (W100 div-by-zero), each with its pc and position.
	Warnings []*Error
	// Visits is the number of instructions the analysis executed
	// abstractly; States the number of states it stored for pruning.
	Visits, States int
	// StackDepth is the largest sum of frame stack sizes along a call
	// chain, in bytes.
	StackDepth int
}

// ErrNoHook is returned when Config.Hook is nil.
var ErrNoHook = errors.New("verifier: no hook given")

// Verify proves insns safe for c.Hook or returns an *Error (wrapped with
// nothing, so errors.As and a type assertion both work) that says where,
// what and why. Only the first error is reported. info may be nil.
func (c *Config) Verify(insns []asm.Instruction, info *Info) (*Result, error) {
	if c.Hook == nil {
		return nil, ErrNoHook
	}
	// First pass: path-sensitive, but joining states at a pc once many
	// have been seen there (fast on branchy programs). If it cannot prove
	// the program safe, a second pass explores every path separately;
	// both are sound, so either one accepting is enough. The reported
	// error is the exact pass's, unless it ran out of budget.
	ck := newChecker(c, insns, info)
	ck.joinAfter = joinAfter
	if e := ck.run(); e != nil {
		if ck.joined == 0 {
			// nothing was joined: the exact pass would do the same
			ck.finish(e)
			return nil, e
		}
		if info != nil && info.States != nil {
			clear(info.States)
		}
		exact := newChecker(c, insns, info)
		if e2 := exact.run(); e2 == nil {
			ck = exact
		} else {
			if e2.Code != Complexity {
				e, ck = e2, exact
			}
			ck.finish(e)
			return nil, e
		}
	}
	for _, w := range ck.warnings {
		ck.finish(w)
	}
	return &Result{Warnings: ck.warnings, Visits: ck.visits, States: ck.stored, StackDepth: ck.stackTotal}, nil
}

// finish fills in the instruction text and the source position of e.
func (ck *checker) finish(e *Error) {
	if e.PC >= 0 && e.PC < len(ck.insns) {
		e.Insn, _ = asm.FormatAt(ck.insns, e.PC)
	}
	if ck.cfg.Source != nil && e.PC >= 0 {
		e.File, e.Line, e.Col, e.Source = ck.cfg.Source(e.PC)
	}
}

func (ck *checker) errorf(code Code, pc int, format string, args ...any) *Error {
	return &Error{Code: code, PC: pc, Msg: fmt.Sprintf(format, args...)}
}

func (ck *checker) mapName(i int) string {
	if i < 0 || i >= len(ck.maps) {
		return fmt.Sprintf("map#%d", i)
	}
	if n := ck.maps[i].Name; n != "" {
		return n
	}
	return fmt.Sprintf("map#%d", i)
}

func orDefault(v, d int) int {
	if v <= 0 {
		return d
	}
	return v
}
