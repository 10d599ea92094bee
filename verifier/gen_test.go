package verifier_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// genProgram returns a random program in the assembler dialect for the
// vtest hook: context loads and stores (r6 holds the context), stack
// accesses at constant and variable offsets, an optional map lookup (r9,
// null-checked or not) with accesses at constant and variable offsets,
// ALU operations that bound or unbound values, and forward branches. Many
// are unsafe; the verifier must reject exactly those it cannot prove.
func genProgram(rng *rand.Rand) string {
	g := &gen{rng: rng}
	g.emit("mov %%r6, %%r1")
	for _, r := range []string{"r7", "r8"} {
		if rng.IntN(20) > 0 {
			g.emit("ldxw %%%s, [%%r6+%d]", r, []int{0, 4, 16, 68}[rng.IntN(4)])
		}
	}
	// sometimes a whole initialized 64-byte stack array at fp-64
	if rng.IntN(3) == 0 {
		for off := -64; off < 0; off += 8 {
			g.stored = append(g.stored, off)
			g.emit("stdw [%%r10%+d], %d", off, g.konst())
		}
	}
	// a few initialized stack slots
	for i := 0; i < rng.IntN(4); i++ {
		off := -8 * (1 + rng.IntN(8))
		g.stored = append(g.stored, off)
		g.emit("stdw [%%r10%+d], %d", off, g.konst())
	}
	hasMap := rng.IntN(10) < 7
	if hasMap {
		g.emit("stw [%%r10-4], %d", rng.IntN(20))
		g.emit("lddw %%r1, map(0)")
		g.emit("mov %%r2, %%r10")
		g.emit("add %%r2, -4")
		g.emit("call 1")
		g.emit("mov %%r9, %%r0")
		if rng.IntN(10) < 8 {
			g.emit("jeq %%r9, 0, end")
		}
	}
	n := 2 + rng.IntN(9)
	var pending []pendingLabel
	for i := 0; i < n; i++ {
		g.op(hasMap)
		for j := 0; j < len(pending); j++ {
			pending[j].left--
			if pending[j].left == 0 {
				g.emit("%s:", pending[j].name)
				pending = append(pending[:j], pending[j+1:]...)
				j--
			}
		}
		if rng.IntN(5) == 0 {
			name := fmt.Sprintf("l%d", g.labels)
			g.labels++
			ops := []string{"jgt", "jge", "jlt", "jle", "jeq", "jne", "jsgt", "jslt", "jset", "jgt32", "jlt32"}
			g.emit("%s %%%s, %d, %s", ops[rng.IntN(len(ops))], g.reg(), g.konst(), name)
			pending = append(pending, pendingLabel{name, 1 + rng.IntN(3)})
		}
	}
	for _, p := range pending {
		g.emit("%s:", p.name)
	}
	g.emit("end:")
	switch rng.IntN(8) {
	case 0:
		g.emit("mov %%r0, %%%s", g.reg())
	case 1, 2, 3:
		g.emit("mov %%r0, 0")
	default:
		g.emit("mov %%r0, %%%s", g.reg())
		g.emit("and %%r0, 255")
	}
	g.emit("exit")
	if g.sub {
		// sub(r1 = base pointer, r2 = index): reads or writes element r2
		g.emit("sub:")
		if rng.IntN(4) > 0 {
			g.emit("and %%r2, %d", []int{7, 15, 11}[rng.IntN(3)])
		}
		g.emit("lsh %%r2, 2")
		g.emit("add %%r1, %%r2")
		if rng.IntN(2) == 0 {
			g.emit("ldxw %%r0, [%%r1+0]")
		} else {
			g.emit("stw [%%r1+0], 7")
			g.emit("mov %%r0, 0")
		}
		g.emit("exit")
	}
	return strings.Join(g.lines, "\n")
}

type pendingLabel struct {
	name string
	left int
}

type gen struct {
	rng    *rand.Rand
	lines  []string
	labels int
	stored []int // stack offsets initialized by the prologue
	sub    bool  // a subprogram follows the entry function
}

func (g *gen) emit(f string, args ...any) { g.lines = append(g.lines, fmt.Sprintf(f, args...)) }

// reg picks a scalar register (possibly uninitialized).
func (g *gen) reg() string {
	if g.rng.IntN(20) == 0 {
		return "r3"
	}
	return []string{"r7", "r8"}[g.rng.IntN(2)]
}

func (g *gen) konst() int {
	return []int{0, 1, 3, 7, 8, 15, 16, 40, 44, 48, 63, 255, -1, 4096}[g.rng.IntN(14)]
}

var widths = []struct {
	suffix string
	n      int
}{{"b", 1}, {"h", 2}, {"w", 4}, {"dw", 8}}

func (g *gen) width() (string, int) {
	w := widths[g.rng.IntN(4)]
	return w.suffix, w.n
}

func (g *gen) op(hasMap bool) {
	rng := g.rng
	sfx, n := g.width()
	switch k := rng.IntN(11); {
	case k == 0: // context load
		off := []int{0, 4, 8, 16, 20, 24, 32, 36, 60, 64, 66, 68, 72}[rng.IntN(13)]
		if rng.IntN(6) > 0 {
			sfx = map[int]string{0: "w", 4: "w", 8: "dw", 16: "w", 20: "w", 24: "dw", 32: "w", 36: "w", 60: "w", 64: "h", 66: "h", 68: "w", 72: "w"}[off]
		}
		g.emit("ldx%s %%%s, [%%r6+%d]", sfx, g.reg(), off)
	case k == 1: // context store
		off := []int{16, 20, 0, 32, 60, 64, 16, 20, 36}[rng.IntN(9)]
		if rng.IntN(6) > 0 {
			sfx = "w"
		}
		g.emit("stx%s [%%r6+%d], %%%s", sfx, off, g.reg())
	case k <= 4: // ALU
		ops := []string{"and %%%s, %d", "add %%%s, %d", "lsh %%%s, %d", "rsh %%%s, %d", "mov %%%s, %d", "mul %%%s, %d", "mod %%%s, %d", "and32 %%%s, %d", "add32 %%%s, %d", "sub %%%s, %d"}
		f := ops[rng.IntN(len(ops))]
		v := g.konst()
		if strings.HasPrefix(f, "lsh") || strings.HasPrefix(f, "rsh") {
			v = rng.IntN(8)
		}
		g.emit(f, g.reg(), v)
		if rng.IntN(4) == 0 {
			g.emit("mov %%%s, %%%s", g.reg(), g.reg())
		}
	case k == 5: // stack store at a constant offset
		off := -8 * (1 + rng.IntN(8))
		if rng.IntN(8) == 0 {
			off = []int{-520, -516, 0, -4, -1, -513}[rng.IntN(6)]
		}
		if rng.IntN(2) == 0 {
			g.emit("st%s [%%r10%+d], %d", sfx, off, g.konst())
		} else {
			g.emit("stx%s [%%r10%+d], %%%s", sfx, off, g.reg())
		}
	case k == 6: // stack load at a constant offset
		off := -8*(1+rng.IntN(8)) + rng.IntN(2)*4
		if len(g.stored) > 0 && rng.IntN(3) > 0 {
			off = g.stored[rng.IntN(len(g.stored))]
			sfx = "dw"
		}
		if rng.IntN(8) == 0 {
			off = []int{-520, 0, -4, -513}[rng.IntN(4)]
		}
		g.emit("ldx%s %%%s, [%%r10%+d]", sfx, g.reg(), off)
	case k == 7: // stack access at a variable offset
		r := g.reg()
		if rng.IntN(4) > 0 {
			g.emit("and %%%s, %d", r, []int{7, 31, 63, 127}[rng.IntN(4)])
		}
		g.emit("mov %%r2, %%r10")
		g.emit("add %%r2, -64")
		g.emit("add %%r2, %%%s", r)
		if rng.IntN(2) == 0 {
			g.emit("ldx%s %%r3, [%%r2+0]", sfx)
		} else {
			g.emit("st%s [%%r2+0], 1", sfx)
		}
	case k == 8 && hasMap: // map value access at a constant offset
		off := []int{0, 8, 16, 40, 44, 48 - n, 48, -8, 4}[rng.IntN(9)]
		if rng.IntN(2) == 0 {
			g.emit("ldx%s %%%s, [%%r9%+d]", sfx, g.reg(), off)
		} else {
			g.emit("stx%s [%%r9%+d], %%%s", sfx, off, g.reg())
		}
	case k == 9 && hasMap: // map value access at a variable offset
		r := g.reg()
		if rng.IntN(4) > 0 {
			g.emit("and %%%s, %d", r, []int{7, 15, 31, 63}[rng.IntN(4)])
		}
		g.emit("mov %%r2, %%r9")
		g.emit("add %%r2, %%%s", r)
		if rng.IntN(2) == 0 {
			g.emit("ldx%s %%r3, [%%r2+0]", sfx)
		} else {
			g.emit("st%s [%%r2+0], 1", sfx)
		}
	case k == 10 && rng.IntN(2) == 0: // a counted loop over an array
		name := fmt.Sprintf("loop%d", g.labels)
		g.labels++
		base, limit := "%r10", 64
		if hasMap && rng.IntN(2) == 0 {
			base, limit = "%r9", 48
		}
		bound := limit/4 + []int{0, 0, 0, 1, -3}[rng.IntN(5)]
		g.emit("mov %%r8, 0")
		g.emit("%s:", name)
		g.emit("mov %%r2, %%r8")
		g.emit("lsh %%r2, 2")
		g.emit("mov %%r3, %s", base)
		if base == "%r10" {
			g.emit("add %%r3, -64")
		}
		g.emit("add %%r3, %%r2")
		if rng.IntN(2) == 0 {
			g.emit("ldxw %%r4, [%%r3+0]")
			g.emit("add %%r7, %%r4")
		} else {
			g.emit("stw [%%r3+0], 1")
		}
		g.emit("add %%r8, 1")
		g.emit("jlt %%r8, %d, %s", bound, name)
	case k == 10 && rng.IntN(2) == 0: // a BPF-to-BPF call with a pointer argument
		g.sub = true
		if hasMap && rng.IntN(2) == 0 {
			g.emit("mov %%r1, %%r9")
		} else {
			g.emit("mov %%r1, %%r10")
			g.emit("add %%r1, -64")
		}
		g.emit("mov %%r2, %%%s", g.reg())
		g.emit("call local sub")
	case k == 10: // helper
		g.emit("call %d", []int{5, 7, 8}[rng.IntN(3)])
	default:
		g.emit("mov %%%s, %d", g.reg(), rng.IntN(64))
	}
}
