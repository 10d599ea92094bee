package verifier

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/helpers"
	"github.com/ncclbpf/ncclbpf/hook"
	"github.com/ncclbpf/ncclbpf/internal/structure"
	"github.com/ncclbpf/ncclbpf/loader"
)

// Map types the verifier knows (the loader's, Linux's enum bpf_map_type
// numbering).
const (
	MapTypeHash          = loader.MapTypeHash
	MapTypeArray         = loader.MapTypeArray
	MapTypePercpuHash    = loader.MapTypePerCPUHash
	MapTypePercpuArray   = loader.MapTypePerCPUArray
	MapTypeLRUHash       = loader.MapTypeLRUHash
	MapTypeLRUPercpuHash = loader.MapTypeLRUPerCPUHash
	MapTypeRingBuf       = loader.MapTypeRingBuf
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
	// DefaultComplexity is the work budget of one verification, over all
	// its passes: one step per instruction visited, per state compared
	// and per join attempted. A step costs a bounded time (under a
	// microsecond on a server core), so the budget bounds the time a
	// program can make the verifier spend, accepted or refused.
	DefaultComplexity = 1_000_000
)

// Map flags the verifier enforces (Linux's numbering).
const (
	// MapFlagReadOnlyProg (BPF_F_RDONLY_PROG): programs may read the map
	// but not write it; the control plane may.
	MapFlagReadOnlyProg uint32 = 1 << 7
	// MapFlagWriteOnlyProg (BPF_F_WRONLY_PROG): programs may write the map
	// but not read it.
	MapFlagWriteOnlyProg uint32 = 1 << 8
)

// readOnly reports a map programs may not write: a frozen one (.rodata,
// whose contents the verifier and the JIT may read) or one declared
// BPF_F_RDONLY_PROG.
func readOnly(m *loader.MapSpec) bool { return m.Freeze || m.Flags&MapFlagReadOnlyProg != 0 }

// frozenValue returns the value a program sees in a frozen single-value
// map (.rodata, as Contents give it), or nil when it is not known.
func frozenValue(m *loader.MapSpec) []byte {
	if !m.Freeze || len(m.Contents) != 1 {
		return nil
	}
	return m.Contents[0].Value
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
	// Maps are the maps LD_IMM64 instructions refer to, by index (Src =
	// asm.PseudoMapFD or asm.PseudoMapValue, Imm = index): the specs the
	// maps will be created from. Programs may only read a map that is
	// frozen (.rodata) or has MapFlagReadOnlyProg, and only write one with
	// MapFlagWriteOnlyProg. The Contents of a frozen map are what programs
	// will see, and the verifier may read them, for example to know which
	// arguments a bpf_printk format consumes.
	Maps []*loader.MapSpec
	// Protos adds helper prototypes to those of package helpers (for test
	// helpers); a helper must still be allowed by the hook.
	Protos map[helpers.ID]*helpers.Proto
	// MaxInsns, MaxCallDepth, MaxStack and Complexity are limits; zero
	// means the Default of the same name.
	MaxInsns     int
	MaxCallDepth int
	MaxStack     int
	Complexity   int
	// Budget, when set, is a work budget shared by several verifications
	// (the programs of one bundle): each draws its steps from it, and
	// Complexity is ignored. It bounds the time a whole object takes to
	// verify, whatever the number of programs in it.
	Budget *Budget
	// Source, when set, locates a pc in the C source for error messages;
	// line <= 0 means unknown.
	Source func(pc int) (file string, line, col int, text string)
	// NoSourceHint, when set, is said with an error Source cannot place
	// (Error.Hint): how to get source lines (rebuild with -g).
	NoSourceHint string
	// ContextType, when set, is the struct the program declares its
	// context parameter as (from BTF): another struct than Hook.Context
	// is rejected with WrongContext.
	ContextType string
	// DisableRankUniformity turns the rank-uniformity analysis of hooks
	// that Decide off. It exists to measure the analysis' cost; a policy
	// verified with it may hang a job.
	DisableRankUniformity bool

	// local marks the maps whose contents may differ between the ranks
	// of a communicator: some program of the bundle writes them (profiler
	// programs write at rank-local times; tuner calls of several
	// communicators interleave in a rank-local order). A hook that Decides
	// may not decide on what it loads from a local map. Maps no program
	// writes (.rodata, BPF_F_RDONLY_PROG maps that the control plane
	// writes at an agreed call, tables filled at load) are uniform.
	// VerifyTogether derives it from the programs' writes; nil means none.
	local []bool
}

// Budget is a verification work budget in steps (see DefaultComplexity),
// shared by the Verify calls whose Config points at it. It is not safe
// for concurrent use.
type Budget struct {
	total, left int
}

// NewBudget returns a budget of steps steps (DefaultComplexity when
// steps <= 0).
func NewBudget(steps int) *Budget {
	steps = orDefault(steps, DefaultComplexity)
	return &Budget{total: steps, left: steps}
}

// Left returns the steps not spent yet.
func (b *Budget) Left() int { return max(b.left, 0) }

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
	// Steps is the work spent over every pass, in the unit of
	// DefaultComplexity.
	Steps int
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

// WritesContext reports whether the program writes any byte of
// [off, off+size) of its context. The host may skip resetting and reading
// outputs that no program writes.
func (r *Result) WritesContext(off, size int) bool {
	for _, a := range r.Context {
		if a.Write && a.Offset < off+size && off < a.Offset+a.Size {
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
	for i, m := range c.Maps {
		if m == nil {
			return nil, fmt.Errorf("verifier: map %d of the configuration has no spec", i)
		}
	}
	// Up to three passes, from fast to precise; all are sound, so the
	// first that proves the program safe decides. (1) Merged: states
	// waiting at the same pc are joined (merged.go). (2) Path-sensitive,
	// joining only once several states have been seen at a pc. (3)
	// Path-sensitive with no joins. A rejection reports the error of the
	// most precise pass that did not run out of budget.
	base := newChecker(c, insns, info)
	if e := c.checkContextType(base); e != nil {
		return nil, e
	}
	if e := base.prepare(); e != nil {
		base.finish(e)
		return nil, e
	}
	// The passes draw on one budget: what one spends, the next lacks.
	var ck *checker
	var best *Error
	var bestCk *checker
	left := orDefault(c.Complexity, DefaultComplexity)
	if c.Budget != nil {
		left = c.Budget.Left()
	}
	if c.Budget != nil && left <= 0 {
		ck := newChecker(c, insns, info)
		e := ck.errorf(Complexity, 0, "no verification budget left: the programs verified before this one spent all %d steps of the object's budget", c.Budget.total)
		ck.finish(e)
		return nil, e
	}
	spent := 0
	defer func() {
		if c.Budget != nil {
			c.Budget.left -= spent
		}
	}()
	for pass := 0; pass < 3; pass++ {
		if info != nil && info.States != nil {
			clear(info.States)
		}
		ck = base.forPass(pass)
		ck.budget = left - spent
		e := ck.explore()
		if e == nil {
			// safe: rank uniformity is decided once, on the whole
			// control-flow graph, from the facts of this pass (flow.go)
			e = ck.checkFlow()
		}
		spent += min(ck.work, ck.budget)
		if e == nil {
			best = nil
			break
		}
		if best == nil || e.Code != Complexity || best.Code == Complexity {
			best, bestCk = e, ck
		}
		if e.Code == RankDivergent {
			break // decided once, on the whole graph: another pass would decide alike
		}
		if e.Code == Complexity && (pass == 0 || spent >= left) {
			break // loops unroll alike in every pass; or nothing is left
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
	return &Result{Warnings: ck.warnings, Visits: ck.visits, Steps: spent, States: ck.stored, StackDepth: ck.stackTotal, MapsWritten: written,
		Context: ck.ctxAccesses(), Structure: ck.prog}, nil
}

// checkContextType rejects a program that declares its context as
// another hook's context struct, or as an ncclbpf_ struct that no hook
// passes (a misspelt name). A struct of the program's own is left to the
// field checks.
func (c *Config) checkContextType(ck *checker) *Error {
	want := c.Hook.Context.Name
	if c.ContextType == "" || c.ContextType == want {
		return nil
	}
	var where []string
	for _, h := range hook.All() {
		if h.Context.Name == c.ContextType {
			where = append(where, h.Sections...)
		}
	}
	var e *Error
	switch {
	case len(where) > 0:
		e = ck.errorf(WrongContext, 0, "the program's parameter is struct %s *, but hook %s passes struct %s *: "+
			"declare it struct %s *ctx, or put the program in a section whose hook passes struct %s (%s)",
			c.ContextType, c.Hook.Name, want, want, c.ContextType, strings.Join(where, ", "))
	case strings.HasPrefix(c.ContextType, "ncclbpf_"):
		e = ck.errorf(WrongContext, 0, "the program's parameter is struct %s *, which no hook passes; hook %s passes struct %s *: "+
			"declare it struct %s *ctx", c.ContextType, c.Hook.Name, want, want)
	default:
		return nil
	}
	ck.finish(e)
	e.Source = "" // the position is the function's first line, not its parameter
	return e
}

// finish fills in the instruction text and the source position of e.
func (ck *checker) finish(e *Error) {
	if e.PC >= 0 && e.PC < len(ck.insns) {
		e.Insn, _ = asm.FormatAt(ck.insns, e.PC)
	}
	if ck.cfg.Source != nil && e.PC >= 0 {
		e.File, e.Line, e.Col, e.Source = ck.cfg.Source(e.PC)
	}
	if e.Line <= 0 {
		e.Hint = ck.cfg.NoSourceHint
	}
}

func (ck *checker) errorf(code Code, pc int, format string, args ...any) *Error {
	return &Error{Code: code, PC: pc, Msg: fmt.Sprintf(format, args...)}
}

// local reports whether map i may hold rank-local contents (Config.local).
func (ck *checker) local(i int) bool {
	return i >= 0 && i < len(ck.cfg.local) && ck.cfg.local[i]
}

// perCPU reports whether map i keeps one copy of each value per thread
// slot: which copy a program reads depends on the thread that runs it
// (the slot threads get in the order they first call a helper), so what
// it reads is rank-local, whoever writes the map (the control plane may
// set each copy apart).
func (ck *checker) perCPU(i int) bool {
	if i < 0 || i >= len(ck.maps) {
		return false
	}
	switch ck.maps[i].Type {
	case MapTypePercpuArray, MapTypePercpuHash, MapTypeLRUPercpuHash:
		return true
	}
	return false
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
