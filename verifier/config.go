package verifier

import (
	"errors"
	"fmt"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/helpers"
	"github.com/ncclbpf/ncclbpf/hook"
	"github.com/ncclbpf/ncclbpf/structure"
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
	// ReadOnly maps (.rodata) may be read but not written by programs;
	// their contents are frozen when the program is loaded.
	ReadOnly bool
	// Flags are the map's map_flags. Programs may only read a map with
	// MapFlagReadOnlyProg and only write one with MapFlagWriteOnlyProg.
	Flags uint32
	// Local says that the map's contents may differ between the ranks of
	// a communicator: some program of the bundle writes it (profiler
	// programs write at rank-local times; tuner calls of several
	// communicators interleave in a rank-local order). A hook that
	// Decides may not decide on what it loads from a Local map. Maps no
	// program writes (.rodata, BPF_F_RDONLY_PROG maps that the control
	// plane writes at an agreed call, tables filled at load) are uniform.
	// VerifyTogether sets it from the programs' writes.
	Local bool
	// Contents, when not nil, is the value of a ReadOnly single-value map
	// (.rodata) as the program will see it: the verifier may read it, for
	// example to know which arguments a bpf_printk format consumes.
	Contents []byte
}

// Map flags the verifier enforces (Linux's numbering).
const (
	// MapFlagReadOnlyProg (BPF_F_RDONLY_PROG): programs may read the map
	// but not write it; the control plane may.
	MapFlagReadOnlyProg uint32 = 1 << 7
	// MapFlagWriteOnlyProg (BPF_F_WRONLY_PROG): programs may write the map
	// but not read it.
	MapFlagWriteOnlyProg uint32 = 1 << 8
)

// readOnly reports a map programs may not write.
func (m *MapInfo) readOnly() bool { return m.ReadOnly || m.Flags&MapFlagReadOnlyProg != 0 }

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
	// DisableRankUniformity turns the rank-uniformity analysis of hooks
	// that Decide off. It exists to measure the analysis' cost; a policy
	// verified with it may hang a job.
	DisableRankUniformity bool
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
	// MapsWritten lists the indexes (into Config.Maps) of the maps the
	// program may write: stores and atomic updates into their values,
	// bpf_map_update_elem and bpf_map_delete_elem.
	MapsWritten []int
	// Context lists the context fields (array elements one by one) the
	// program reads or writes, by offset. The verifier proves every
	// context access, so nothing else of the context is ever touched.
	Context []CtxAccess
	// Structure is the program's validated structure. Engines given it
	// (vm.Program.Structure) do not validate the instructions again.
	Structure *structure.Program
}

// CtxAccess is one context field, or one element of an array field, that
// a program accesses.
type CtxAccess struct {
	// Field names it: "avail_mask", "cost[3]".
	Field string
	// Offset and Size place it in the context, in bytes.
	Offset, Size int
	// Read and Write say how the program accesses it.
	Read, Write bool
}

// ReadsContext reports whether the program reads any byte of
// [off, off+size) of its context. The host may skip filling inputs that
// no program reads.
func (r *Result) ReadsContext(off, size int) bool {
	for _, a := range r.Context {
		if a.Read && a.Offset < off+size && off < a.Offset+a.Size {
			return true
		}
	}
	return false
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
	// Up to three passes, from fast to precise; all are sound, so the
	// first that proves the program safe decides. (1) Merged: states
	// waiting at the same pc are joined (merged.go). (2) Path-sensitive,
	// joining only once several states have been seen at a pc. (3)
	// Path-sensitive with no joins. A rejection reports the error of the
	// most precise pass that did not run out of budget.
	base := newChecker(c, insns, info)
	if e := base.prepare(); e != nil {
		base.finish(e)
		return nil, e
	}
	var ck *checker
	var best *Error
	var bestCk *checker
	for pass := 0; pass < 3; pass++ {
		if info != nil && info.States != nil {
			clear(info.States)
		}
		ck = base.forPass(pass)
		e := ck.explore()
		if e == nil {
			best = nil
			break
		}
		if best == nil || e.Code != Complexity || best.Code == Complexity {
			best, bestCk = e, ck
		}
		if pass == 0 && e.Code == Complexity {
			break // loops unroll alike in every pass
		}
		if pass > 0 && ck.joined == 0 && !ck.merged {
			break // no join happened: the exact pass would do the same
		}
	}
	if best != nil {
		bestCk.finish(best)
		return nil, best
	}
	for _, w := range ck.warnings {
		ck.finish(w)
	}
	var written []int
	for i, w := range ck.written {
		if w {
			written = append(written, i)
		}
	}
	return &Result{Warnings: ck.warnings, Visits: ck.visits, States: ck.stored, StackDepth: ck.stackTotal, MapsWritten: written,
		Context: ck.ctxAccesses(), Structure: ck.prog}, nil
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

// where names pc for messages: "policy.c:41 (pc 7)" when the source
// position is known, "pc 7" otherwise.
func (ck *checker) where(pc int) string {
	if ck.cfg.Source != nil && pc >= 0 {
		if file, line, _, _ := ck.cfg.Source(pc); line > 0 {
			if file == "" {
				return fmt.Sprintf("line %d (pc %d)", line, pc)
			}
			return fmt.Sprintf("%s:%d (pc %d)", file, line, pc)
		}
	}
	return fmt.Sprintf("pc %d", pc)
}
