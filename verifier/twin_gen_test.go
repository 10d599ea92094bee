package verifier

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/ncclbpf/ncclbpf/hook"
)

// The two-run generator: random tuner and chunk_size programs in the
// assembler dialect, structured (branches with joins, bounded loops with
// early exits, subprograms that write the caller's stack), reading
// uniform and local context fields, helpers, and maps of every type.
//
// A program is made in one of two modes. Free programs mix everything
// anywhere: many are rank-divergent, and the oracle checks that none the
// verifier accepts decides differently on two runs. Uniform programs are
// rank-uniform by construction: local data (the [local] field, clocks,
// random numbers, the thread slot, bpf_printk's and updates' results, LRU,
// per-CPU and program-written maps) only ever reaches r9, the stack slot
// fp-56 and maps that the uniform part never reads, and a branch on it
// guards only such writes; the verifier should accept them all (the
// acceptance rate is its precision on them).

// twin maps, by index: the bundle every generated program is verified and
// run with.
const (
	twinCfg      = iota // array no program writes
	twinStatsMap        // array the bundle's profiler program writes
	twinHash            // hash no program writes
	twinLRU             // LRU hash (a lookup reorders it)
	twinPCPU            // per-CPU array
	twinMemo            // hash the tuner may update
	twinRodata          // frozen read-only array (.rodata)
	twinMaps
)

type twinGen struct {
	rng     *rand.Rand
	hook    *hook.Hook
	chunk   bool
	uniform bool
	lines   []string
	subs    []string
	nlabel  int
	loops   int // loops open (each has its counter slot)
	budget  int // statements left
	nsubs   int
}

// twinProgram returns the source of program i of seed, and whether it is
// uniform by construction.
func twinProgram(seed uint64, i int) (src string, h *hook.Hook, uniform bool) {
	rng := rand.New(rand.NewPCG(seed, uint64(i)))
	g := &twinGen{rng: rng, chunk: rng.IntN(4) == 0, uniform: rng.IntN(3) == 0, budget: 6 + rng.IntN(20)}
	g.hook = hook.Get(hook.Tuner)
	if g.chunk {
		g.hook = hook.Get(hook.TunerChunkSize)
	}
	g.emit("mov %%r6, %%r1")
	for _, r := range []string{"r7", "r8", "r9"} {
		g.emit("mov %%%s, %d", r, rng.IntN(8))
	}
	for off := -8; off >= -56; off -= 8 {
		g.emit("stdw [%%r10%+d], %d", off, rng.IntN(8))
	}
	for g.budget > 0 {
		g.stmt(false, 0)
	}
	g.ret(false)
	for _, s := range g.subs {
		g.lines = append(g.lines, s)
	}
	return strings.Join(g.lines, "\n") + "\n", g.hook, g.uniform
}

func (g *twinGen) emit(f string, args ...any) { g.lines = append(g.lines, fmt.Sprintf(f, args...)) }
func (g *twinGen) chance(n, d int) bool       { return g.rng.IntN(d) < n }
func (g *twinGen) label() string {
	g.nlabel++
	return fmt.Sprintf("l%d", g.nlabel)
}

// regs the code at hand may write and read: in a uniform program, r7 and
// r8 outside sandboxes, r9 inside; in a free program, all three.
func (g *twinGen) dstReg(sandbox bool) string {
	switch {
	case !g.uniform:
		return twinPick(g.rng, "r7", "r8", "r9")
	case sandbox:
		return "r9"
	}
	return twinPick(g.rng, "r7", "r8")
}

func (g *twinGen) srcReg(sandbox bool) string {
	if !g.uniform || sandbox {
		return twinPick(g.rng, "r7", "r8", "r9")
	}
	return twinPick(g.rng, "r7", "r8")
}

// slot returns a stack slot the code at hand may write (uniform part:
// fp-8..fp-48; sandbox: fp-56).
func (g *twinGen) slot(sandbox bool) int {
	switch {
	case !g.uniform:
		return -8 * (1 + g.rng.IntN(7))
	case sandbox:
		return -56
	}
	return -8 * (1 + g.rng.IntN(6))
}

func (g *twinGen) srcSlot(sandbox bool) int {
	if !g.uniform || sandbox {
		return -8 * (1 + g.rng.IntN(7))
	}
	return -8 * (1 + g.rng.IntN(6))
}

func twinPick[T any](rng *rand.Rand, xs ...T) T { return xs[rng.IntN(len(xs))] }

// uniformField loads a [uniform] context field into r.
func (g *twinGen) uniformField(r string) {
	if g.chunk {
		off := twinPick(g.rng, 16, 24, 32, 36, 40, 44, 48, 52)
		if off <= 24 {
			g.emit("ldxdw %%%s, [%%r6+%d]", r, off)
		} else {
			g.emit("ldxw %%%s, [%%r6+%d]", r, off)
		}
		return
	}
	switch off := twinPick(g.rng, 8, 16, 24, 36, 40, 60, 64, 68, 148); {
	case off <= 16:
		g.emit("ldxdw %%%s, [%%r6+%d]", r, off)
	default:
		g.emit("ldxw %%%s, [%%r6+%d]", r, off)
	}
}

// value puts a value from a source the code at hand may read into r.
func (g *twinGen) value(r string, sandbox bool) {
	local := !g.uniform || sandbox
	n := 5
	if local {
		n = 11
	}
	switch g.rng.IntN(n) {
	case 0, 1:
		g.uniformField(r)
	case 2:
		g.emit("mov %%%s, %d", r, g.rng.IntN(16))
	case 3:
		g.emit("ldxdw %%%s, [%%r10%+d]", r, g.srcSlot(sandbox))
	case 4:
		m := twinPick(g.rng, twinCfg, twinHash, twinRodata)
		if local {
			m = g.rng.IntN(twinMaps)
		}
		g.lookupInto(r, m, g.srcReg(sandbox), false)
	case 5:
		if g.chunk {
			g.emit("call 7")
		} else {
			g.emit("ldxw %%%s, [%%r6+32]", r) // reg_buff [local]
			return
		}
		g.emit("mov %%%s, %%r0", r)
	case 6:
		g.emit("call %d", twinPick(g.rng, 5, 7, 8))
		g.emit("mov %%%s, %%r0", r)
	case 7:
		g.printk(g.srcReg(sandbox))
		g.emit("mov %%%s, %%r0", r)
	case 8:
		g.update(g.srcReg(sandbox), g.srcReg(sandbox))
		g.emit("mov %%%s, %%r0", r)
	case 9:
		g.lookupInto(r, twinPick(g.rng, twinLRU, twinPCPU, twinStatsMap, twinMemo), g.srcReg(sandbox), g.chance(1, 2))
	default:
		g.emit("ldxw %%%s, [%%r10%+d]", r, g.srcSlot(sandbox)+4*g.rng.IntN(2))
	}
}

// lookupInto looks key (register) up in map m and loads the value (or a
// constant when there is none) into r; with write, it also stores into
// the value.
func (g *twinGen) lookupInto(r string, m int, key string, write bool) {
	miss, done := g.label(), g.label()
	g.emit("stxw [%%r10-64], %%%s", key)
	g.emit("lddw %%r1, map(%d)", m)
	g.emit("mov %%r2, %%r10")
	g.emit("add %%r2, -64")
	g.emit("call 1")
	g.emit("jeq %%r0, 0, %s", miss)
	if write && m != twinRodata && m != twinCfg && m != twinHash {
		if g.chance(1, 2) {
			g.emit("stxdw [%%r0+0], %%%s", key)
		} else {
			g.emit("mov %%r1, 1")
			g.emit("lock add [%%r0+0], %%r1")
		}
	}
	g.emit("ldxdw %%%s, [%%r0+0]", r)
	g.emit("ja %s", done)
	g.emit("%s:", miss)
	g.emit("mov %%%s, %d", r, g.rng.IntN(4))
	g.emit("%s:", done)
}

// update writes memo[key & 7] = val with BPF_ANY or BPF_NOEXIST; r0 is
// its result.
func (g *twinGen) update(key, val string) {
	g.emit("mov %%r1, %%%s", key)
	g.emit("and %%r1, 7")
	g.emit("stxw [%%r10-64], %%r1")
	g.emit("stxdw [%%r10-96], %%%s", val)
	g.emit("lddw %%r1, map(%d)", twinMemo)
	g.emit("mov %%r2, %%r10")
	g.emit("add %%r2, -64")
	g.emit("mov %%r3, %%r10")
	g.emit("add %%r3, -96")
	g.emit("mov %%r4, %d", g.rng.IntN(2))
	g.emit("call 2")
}

// printk formats v with "%d\n"; r0 is its result.
func (g *twinGen) printk(v string) {
	g.emit("lddw %%r1, 0x0a6425")
	g.emit("stxdw [%%r10-72], %%r1")
	g.emit("mov %%r1, %%r10")
	g.emit("add %%r1, -72")
	g.emit("mov %%r2, 4")
	g.emit("mov %%r3, %%%s", v)
	g.emit("call 6")
}

func (g *twinGen) cond(sandbox bool) string {
	op := twinPick(g.rng, "jgt", "jge", "jlt", "jle", "jeq", "jne", "jset", "jsgt", "jgt32", "jeq32")
	a := g.srcReg(sandbox)
	if g.chance(1, 3) {
		return fmt.Sprintf("%s %%%s, %%%s", op, a, g.srcReg(sandbox))
	}
	return fmt.Sprintf("%s %%%s, %d", op, a, g.rng.IntN(12))
}

// stmt emits one statement. sandbox: the code handles local data (only in
// uniform programs, where it may write r9, fp-56 and maps only).
func (g *twinGen) stmt(sandbox bool, depth int) {
	g.budget--
	k := g.rng.IntN(14)
	if depth > 2 && k >= 7 && k <= 9 {
		k = 0
	}
	switch k {
	case 0, 1:
		g.value(g.dstReg(sandbox), sandbox)
	case 2:
		op := twinPick(g.rng, "add", "sub", "mul", "and", "or", "xor", "lsh", "rsh", "add32", "mov")
		if g.chance(1, 2) {
			g.emit("%s %%%s, %%%s", op, g.dstReg(sandbox), g.srcReg(sandbox))
		} else {
			g.emit("%s %%%s, %d", op, g.dstReg(sandbox), g.rng.IntN(9))
		}
	case 3:
		off := g.slot(sandbox)
		switch g.rng.IntN(3) {
		case 0:
			g.emit("stxdw [%%r10%+d], %%%s", off, g.srcReg(sandbox))
		case 1:
			g.emit("stxw [%%r10%+d], %%%s", off+4*g.rng.IntN(2), g.srcReg(sandbox))
		default:
			g.emit("stw [%%r10%+d], %d", off+4*g.rng.IntN(2), g.rng.IntN(9))
		}
	case 4:
		if sandbox || !g.uniform {
			g.decideOrSandbox(sandbox, depth)
			return
		}
		g.decide()
	case 5:
		g.callSub(sandbox)
	case 6:
		if g.uniform && !sandbox {
			g.sandbox(depth)
		} else if !g.uniform {
			g.lookupInto(g.dstReg(sandbox), g.rng.IntN(twinMaps), g.srcReg(sandbox), true)
		} else {
			g.update(g.srcReg(sandbox), g.srcReg(sandbox))
		}
	case 7, 8:
		g.ifElse(sandbox, depth)
	case 9:
		g.loop(sandbox, depth)
	case 10:
		g.value(g.dstReg(sandbox), sandbox)
	default:
		if !sandbox {
			g.decide()
		} else {
			g.value(g.dstReg(sandbox), sandbox)
		}
	}
}

func (g *twinGen) decideOrSandbox(sandbox bool, depth int) {
	if !sandbox {
		g.decide()
		return
	}
	g.value(g.dstReg(sandbox), sandbox)
}

// decide stores a value into a decision output.
func (g *twinGen) decide() {
	v := g.srcReg(false)
	if g.chunk {
		if g.chance(1, 4) {
			g.emit("stdw [%%r6+56], %d", g.rng.IntN(1<<20))
		} else {
			g.emit("stxdw [%%r6+56], %%%s", v)
		}
		return
	}
	off := twinPick(g.rng, 148, 152, 156)
	if g.chance(1, 4) {
		g.emit("stw [%%r6+%d], %d", off, g.rng.IntN(6))
	} else {
		g.emit("stxw [%%r6+%d], %%%s", off, v)
	}
}

// ret ends the program with a value from the code at hand.
func (g *twinGen) ret(sandbox bool) {
	if g.chance(1, 2) {
		g.emit("mov %%r0, %%%s", g.srcReg(sandbox))
		g.emit("and %%r0, 1")
	} else {
		g.emit("mov %%r0, %d", g.rng.IntN(2))
	}
	g.emit("exit")
}

// sandbox emits local code in a uniform program: it may branch and loop
// on local data, but writes only r9, fp-56 and maps.
func (g *twinGen) sandbox(depth int) {
	for n := 1 + g.rng.IntN(4); n > 0 && g.budget > -20; n-- {
		g.stmt(true, depth+1)
	}
}

func (g *twinGen) ifElse(sandbox bool, depth int) {
	other, end := g.label(), g.label()
	g.emit("%s, %s", g.cond(sandbox), other)
	for n := 1 + g.rng.IntN(3); n > 0; n-- {
		g.stmt(sandbox, depth+1)
	}
	// an early return ends one side (never inside a loop, whose counter
	// update would then be unreachable on every path of its body)
	early := !sandbox && g.loops == 0 && g.chance(1, 4)
	if early {
		g.ret(false)
	}
	hasElse := g.chance(1, 2)
	if hasElse && !early {
		g.emit("ja %s", end)
	}
	g.emit("%s:", other)
	if hasElse {
		for n := 1 + g.rng.IntN(3); n > 0; n-- {
			g.stmt(sandbox, depth+1)
		}
		g.emit("%s:", end)
	}
}

// loop emits a loop of at most 7 iterations whose bound is a register of
// the code at hand (masked) or a constant, with an optional early exit.
func (g *twinGen) loop(sandbox bool, depth int) {
	if g.loops >= 2 {
		g.value(g.dstReg(sandbox), sandbox)
		return
	}
	ctr := -80 - 8*g.loops
	g.loops++
	defer func() { g.loops-- }()
	head, exit := g.label(), g.label()
	g.emit("stdw [%%r10%+d], 0", ctr)
	g.emit("%s:", head)
	g.emit("ldxdw %%r5, [%%r10%+d]", ctr)
	if g.chance(1, 2) {
		g.emit("mov %%r4, %%%s", g.srcReg(sandbox))
		g.emit("and %%r4, 7")
		g.emit("jge %%r5, %%r4, %s", exit)
	} else {
		g.emit("jge %%r5, %d, %s", 1+g.rng.IntN(6), exit)
	}
	for n := 1 + g.rng.IntN(3); n > 0; n-- {
		g.stmt(sandbox, depth+1)
	}
	if g.chance(1, 3) {
		g.emit("%s, %s", g.cond(sandbox), exit)
	}
	g.emit("ldxdw %%r5, [%%r10%+d]", ctr)
	g.emit("add %%r5, 1")
	g.emit("stxdw [%%r10%+d], %%r5", ctr)
	g.emit("ja %s", head)
	g.emit("%s:", exit)
}

// callSub calls a new subprogram with a pointer to a stack slot of the
// caller and a value; the callee may branch on the value, write through
// the pointer, and return a value.
func (g *twinGen) callSub(sandbox bool) {
	if g.nsubs >= 3 {
		g.value(g.dstReg(sandbox), sandbox)
		return
	}
	g.nsubs++
	name := fmt.Sprintf("f%d", g.nsubs)
	off := g.slot(sandbox)
	g.emit("mov %%r1, %%r10")
	g.emit("add %%r1, %d", off)
	g.emit("mov %%r2, %%%s", g.srcReg(sandbox))
	g.emit("call local %s", name)
	g.emit("mov %%%s, %%r0", g.dstReg(sandbox))
	// the callee: in a uniform program outside a sandbox it sees only
	// uniform data (its argument); elsewhere it may read local data
	local := !g.uniform || sandbox
	var b []string
	e := func(f string, args ...any) { b = append(b, fmt.Sprintf(f, args...)) }
	skip := g.label()
	e("%s:", name)
	e("mov %%r6, %%r1")
	e("mov %%r7, %%r2")
	e("mov %%r0, %d", g.rng.IntN(2))
	if local && g.chance(1, 2) {
		e("call %d", twinPick(g.rng, 5, 7, 8))
		e("mov %%r7, %%r0")
	}
	e("jgt %%r7, %d, %s", g.rng.IntN(8), skip)
	switch g.rng.IntN(3) {
	case 0:
		e("stxdw [%%r6+0], %%r7")
	case 1:
		e("stxw [%%r6+%d], %%r7", 4*g.rng.IntN(2))
	default:
		e("stdw [%%r6+0], %d", g.rng.IntN(8))
	}
	if g.chance(1, 2) {
		e("mov %%r0, %%r7")
		e("and %%r0, 3")
	} else {
		e("mov %%r0, 2")
	}
	e("%s:", skip)
	if g.chance(1, 2) {
		e("stdw [%%r10-8], 5")
		e("ldxdw %%r1, [%%r10-8]")
		e("add %%r0, %%r1")
	}
	e("exit")
	g.subs = append(g.subs, strings.Join(b, "\n"))
}
