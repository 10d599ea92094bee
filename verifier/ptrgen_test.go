package verifier_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// A structured generator of pointer-heavy programs for the vtest hook and
// the asmMaps maps (arr: array of 16 x 48 bytes, hash: 8-byte keys and
// values, rb: ring buffer, ro: read-only array of 1 x 16 bytes).
//
// Random instruction soup rarely builds what breaks a verifier: a pointer
// that is one object on one path and another on the other, pointer minus
// pointer fed back into an address, comparisons of pointers, spills that
// are partly overwritten, references merged at joins. This generator
// builds those constructions on purpose, each mostly in a correct form and
// sometimes with one detail wrong (a bound off by one, a missing check, a
// width too small), so that the verifier must tell the two apart. Every
// construction it emits is recorded as a tag; the soundness test reports
// how many accepted programs contain each.
//
// Stack layout of the entry frame: [fp-64, fp) is the "stack array" that
// stack pointers point into, fp-72 the map key, [fp-136, fp-72) spill
// slots, fp-144 a loop counter slot, [fp-176, fp-144) printk formats.

// Construction tags.
const (
	tagLookupArr   = "lookup_arr"
	tagLookupHash  = "lookup_hash"
	tagLookupRO    = "lookup_ro"
	tagGlobal      = "map_value_ld"
	tagNoNull      = "missing_null_check"
	tagRing        = "ringbuf_reserve"
	tagRingJoin    = "ringbuf_join"
	tagRingUse     = "ringbuf_use_after_release"
	tagJoin        = "join_ptrs"
	tagJoinSub     = "join_ptr_minus_ptr"
	tagArithConst  = "ptr_add_const"
	tagArithVar    = "ptr_add_var"
	tagBoundAnd    = "bound_and"
	tagBoundCmp    = "bound_cmp"
	tagBoundCmp32  = "bound_cmp32"
	tagSext        = "bound_sext"
	tagBoundSigned = "bound_signed"
	tagBound32     = "bound_alu32"
	tagBoundSub32  = "bound_sub32_copy"
	tagPtrSub      = "ptr_minus_ptr"
	tagCmpPtrPtr   = "cmp_ptr_ptr"
	tagCmpPtrK     = "cmp_ptr_scalar"
	tagCmp32       = "cmp_ptr_32"
	tagCmpSigned   = "cmp_ptr_signed"
	tagSpillPtr    = "spill_ptr"
	tagSpillScal   = "spill_scalar"
	tagPartial     = "spill_partial_overwrite"
	tagNarrowFill  = "fill_narrow"
	tagLoop        = "loop"
	tagLoopStack   = "loop_stack_counter"
	tagLoopPtr     = "loop_ptr_cursor"
	tagSub         = "subprog_ptr_arg"
	tagSubRet      = "subprog_returns_ptr"
	tagHelperMem   = "helper_mem_arg"
	tagPrintk      = "printk"
	tagLinks       = "copies_past_link_table"
	tagLoad        = "load"
	tagStore       = "store"
	tagAtomic      = "atomic"
	tagRetWide     = "return_wide"
	tagRetPtr      = "return_ptr_derived"
)

// allPtrTags lists the tags every long enough run must see in accepted
// programs.
var allPtrTags = []string{tagLookupArr, tagLookupHash, tagLookupRO, tagGlobal, tagRing, tagRingJoin,
	tagJoin, tagJoinSub, tagArithConst, tagArithVar, tagBoundAnd, tagBoundCmp, tagBoundCmp32, tagSext,
	tagBoundSigned, tagBound32, tagBoundSub32, tagPtrSub, tagCmpPtrPtr, tagSpillPtr, tagSpillScal, tagPartial, tagNarrowFill,
	tagLoop, tagLoopStack, tagLoopPtr, tagSub, tagSubRet, tagHelperMem, tagPrintk, tagLinks, tagLoad, tagStore, tagAtomic}

// object kinds a register may point to
type okind int

const (
	oNone okind = iota
	oScalar
	oCtx
	oStack
	oArr
	oHash
	oRO
	oRing
	oGlobal
	oJoined
)

// preg is what the generator believes a register holds: a pointer with
// room bytes left before the end of its object (lo bytes before the
// start), or a scalar.
type preg struct {
	k        okind
	room, lo int
	ro       bool // not writable
	ring     int  // ring record number for oRing
}

func (p preg) isPtr() bool { return p.k >= oCtx }

// ptrProg is one generated program.
type ptrProg struct {
	src  string
	tags map[string]bool
}

type pgen struct {
	rng    *rand.Rand
	lines  []string
	labels int
	regs   [10]preg
	tags   map[string]bool
	rings  []int // live ring records (in r9 only)
	nrings int
	funcs  map[string]bool
}

// genPtrProgram returns one random pointer-heavy program.
func genPtrProgram(rng *rand.Rand) ptrProg {
	g := &pgen{rng: rng, tags: map[string]bool{}, funcs: map[string]bool{}}
	g.emit("mov %%r6, %%r1")
	g.regs[6] = preg{k: oCtx, room: 72}
	// the stack array, usually initialized
	if g.chance(29, 30) {
		for off := -64; off < 0; off += 8 {
			g.emit("stdw [%%r10%+d], %d", off, g.small())
		}
	} else {
		for i := 0; i < 3; i++ {
			off := -8 * (1 + g.rng.IntN(8))
			g.emit("stdw [%%r10%+d], %d", off, g.small())
		}
	}
	// objects into r7, r8 and maybe r9
	for _, r := range []int{7, 8} {
		g.acquire(r)
	}
	if g.chance(1, 3) {
		g.reserve(9)
	} else if g.chance(1, 2) {
		g.acquire(9)
	}
	for n := 2 + g.rng.IntN(7); n > 0; n-- {
		g.construction()
	}
	g.ret()
	g.emitFuncs()
	return ptrProg{src: strings.Join(g.lines, "\n") + "\n", tags: g.tags}
}

func (g *pgen) emit(f string, args ...any) { g.lines = append(g.lines, fmt.Sprintf(f, args...)) }
func (g *pgen) chance(n, d int) bool       { return g.rng.IntN(d) < n }
func (g *pgen) label(p string) string {
	g.labels++
	return fmt.Sprintf("%s%d", p, g.labels)
}
func (g *pgen) tag(t string) { g.tags[t] = true }

func (g *pgen) small() int {
	return []int{0, 1, 2, 3, 7, 8, 15, 16, 40, 47, 48, 63, 64, -1, 255}[g.rng.IntN(15)]
}

func pick[T any](rng *rand.Rand, xs ...T) T { return xs[rng.IntN(len(xs))] }

// bail ends the program early on a failed lookup or reservation,
// discarding a live record.
func (g *pgen) bail() {
	if len(g.rings) > 0 {
		g.emit("mov %%r1, %%r9")
		g.emit("mov %%r2, 0")
		g.emit("call 133")
	}
	g.emit("mov %%r0, 0")
	g.emit("exit")
}

// nullCheck checks r0 and moves it to r; sometimes the check is missing or
// done on the copy.
func (g *pgen) nullCheck(r int) {
	ok := g.label("ok")
	copied := false
	switch {
	case g.chance(1, 25):
		g.tag(tagNoNull)
		g.emit("mov %%r%d, %%r0", r)
		return
	case g.chance(1, 3):
		g.emit("mov %%r%d, %%r0", r)
		g.emit("jne %%r%d, 0, %s", r, ok)
		copied = true
	default:
		g.emit("jne %%r0, 0, %s", ok)
	}
	g.bail()
	g.emit("%s:", ok)
	if !copied {
		g.emit("mov %%r%d, %%r0", r)
	}
}

// acquire puts a pointer into register r: a map value, the stack array,
// the context or a map value loaded directly.
func (g *pgen) acquire(r int) {
	switch g.rng.IntN(9) {
	case 0, 1, 2:
		g.tag(tagLookupArr)
		key := pick(g.rng, 0, 1, 5, 15, 15, 16) // 16 is out of range: null
		g.emit("stw [%%r10-72], %d", key)
		g.emit("lddw %%r1, map(0)")
		g.emit("mov %%r2, %%r10")
		g.emit("add %%r2, -72")
		g.emit("call 1")
		g.nullCheck(r)
		g.regs[r] = preg{k: oArr, room: 48}
	case 3, 4:
		g.tag(tagLookupHash)
		g.emit("stdw [%%r10-72], %d", g.rng.IntN(8))
		g.emit("lddw %%r1, map(1)")
		g.emit("mov %%r2, %%r10")
		g.emit("add %%r2, -72")
		g.emit("call 1")
		g.nullCheck(r)
		g.regs[r] = preg{k: oHash, room: 8}
	case 5:
		g.tag(tagLookupRO)
		g.emit("stw [%%r10-72], 0")
		g.emit("lddw %%r1, map(3)")
		g.emit("mov %%r2, %%r10")
		g.emit("add %%r2, -72")
		g.emit("call 1")
		g.nullCheck(r)
		g.regs[r] = preg{k: oRO, room: 16, ro: true}
	case 6:
		g.tag(tagGlobal)
		off := pick(g.rng, 0, 8, 16, 40)
		g.emit("lddw %%r%d, map_value(0)+%d", r, off)
		g.regs[r] = preg{k: oGlobal, room: 48 - off, lo: off}
	case 7:
		off := pick(g.rng, 64, 64, 32, 8)
		g.emit("mov %%r%d, %%r10", r)
		g.emit("add %%r%d, -%d", r, off)
		g.regs[r] = preg{k: oStack, room: off, lo: 512 - off}
	default:
		g.emit("mov %%r%d, %%r6", r)
		g.regs[r] = preg{k: oCtx, room: 72}
	}
}

// reserve puts a ring buffer record into r (r9).
func (g *pgen) reserve(r int) {
	g.tag(tagRing)
	size := pick(g.rng, 8, 16, 48, 64)
	g.emit("lddw %%r1, map(2)")
	g.emit("mov %%r2, %d", size)
	g.emit("mov %%r3, 0")
	g.emit("call 131")
	g.nullCheck(r)
	g.nrings++
	g.rings = append(g.rings, g.nrings)
	g.regs[r] = preg{k: oRing, room: size, ring: g.nrings}
}

// ptrReg picks a register believed to hold a pointer (r6-r9).
func (g *pgen) ptrReg() int {
	var cands []int
	for r := 6; r <= 9; r++ {
		if g.regs[r].isPtr() {
			cands = append(cands, r)
		}
	}
	if len(cands) == 0 {
		return 6
	}
	return cands[g.rng.IntN(len(cands))]
}

// memReg picks a pointer register other than the context when there is
// one.
func (g *pgen) memReg() int {
	for i := 0; i < 4; i++ {
		if r := g.ptrReg(); g.regs[r].k != oCtx || i == 3 {
			return r
		}
	}
	return 6
}

var ctxFields = []struct{ off, size int }{{0, 4}, {4, 4}, {8, 8}, {16, 4}, {32, 4}, {36, 4}, {60, 4}, {64, 2}, {68, 4}}

var widthSfx = map[int]string{1: "b", 2: "h", 4: "w", 8: "dw"}

// accessOff chooses an access of w bytes for p: usually inside the object,
// sometimes just outside.
func (g *pgen) accessOff(p preg, w int) int {
	off := g.accessOff1(p, w)
	if off < -32768 || off > 32767 {
		off = 0
	}
	return off
}

func (g *pgen) accessOff1(p preg, w int) int {
	if p.room > 4096 || p.room < -4096 {
		return pick(g.rng, 0, -1, 8)
	}
	switch {
	case g.chance(1, 12):
		return p.room - w + 1
	case g.chance(1, 12):
		return pick(g.rng, p.room, -1, -w, p.room-w+4, -p.lo-1)
	case p.room >= w:
		return (g.rng.IntN(p.room-w+1) / w) * w
	}
	return 0
}

func (g *pgen) width() int { return pick(g.rng, 1, 2, 4, 8, 8) }

// access loads through or stores to pointer register p at offset off.
func (g *pgen) access(p int, pr preg, dst int) {
	w := g.width()
	var off int
	store := !(g.chance(1, 2) || pr.ro && g.chance(3, 4))
	if pr.k == oCtx {
		f := ctxFields[g.rng.IntN(len(ctxFields))]
		if store && g.chance(7, 8) {
			f = pick(g.rng, ctxFields[3], ctxFields[4], ctxFields[5], ctxFields[6], struct{ off, size int }{20, 4})
		}
		w, off = f.size, f.off-(72-pr.room)
		if g.chance(1, 15) {
			off += pick(g.rng, -4, 4, 2)
		}
		if g.chance(1, 15) {
			w = pick(g.rng, 1, 8)
		}
	} else {
		off = g.accessOff(pr, w)
	}
	if off < -32768 || off > 32767 {
		off = 0
	}
	if !store {
		g.tag(tagLoad)
		g.emit("ldx%s %%r%d, [%%r%d%+d]", widthSfx[w], dst, p, off)
		g.regs[dst] = preg{k: oScalar}
		return
	}
	g.tag(tagStore)
	if pr.k != oCtx && g.chance(1, 6) {
		// atomics: naturally aligned 4 or 8 bytes (a misaligned one may
		// split a cache line: a bus lock, SIGBUS with split-lock detection)
		g.tag(tagAtomic)
		if w < 4 {
			w = 4
		}
		if g.chance(7, 8) {
			off &^= w - 1
		}
		sfx := map[int]string{4: "32", 8: ""}[w]
		src := g.scalarReg()
		switch g.rng.IntN(4) {
		case 0:
			g.emit("lock add%s [%%r%d%+d], %%r%d", sfx, p, off, src)
		case 1:
			g.emit("lock fetch or%s [%%r%d%+d], %%r%d", sfx, p, off, src)
			g.regs[src] = preg{k: oScalar}
		case 2:
			g.emit("lock xchg%s [%%r%d%+d], %%r%d", sfx, p, off, src)
			g.regs[src] = preg{k: oScalar}
		default:
			g.emit("mov %%r0, %d", g.small())
			g.emit("lock cmpxchg%s [%%r%d%+d], %%r%d", sfx, p, off, src)
			g.regs[0] = preg{k: oScalar}
		}
		return
	}
	if g.chance(1, 2) {
		g.emit("st%s [%%r%d%+d], %d", widthSfx[w], p, off, g.small())
	} else {
		src := g.scalarReg()
		g.emit("stx%s [%%r%d%+d], %%r%d", widthSfx[w], p, off, src)
	}
}

// scalarReg returns a register holding a number: it loads one from the
// context when none is at hand.
func (g *pgen) scalarReg() int {
	for _, r := range []int{0, 1, 2, 3, 4, 5} {
		if g.regs[r].k == oScalar && g.chance(1, 2) {
			return r
		}
	}
	g.emit("ldxw %%r5, [%%r6+%d]", pick(g.rng, 0, 4, 16, 32, 68))
	g.regs[5] = preg{k: oScalar}
	return 5
}

// loadScalar loads an unknown number into r from the context (through r6,
// which stays the context unless a join replaced it), the stack array or a
// map value.
func (g *pgen) loadScalar(r int) {
	switch g.rng.IntN(5) {
	case 0:
		g.emit("ldxdw %%r%d, [%%r6+8]", r)
	case 4:
		// sign-extending loads: an int read as a 64-bit value
		g.tag(tagSext)
		f := pick(g.rng, [2]int{4, 0}, [2]int{4, 4}, [2]int{4, 16}, [2]int{2, 64})
		g.emit("ldxs%s %%r%d, [%%r6+%d]", widthSfx[f[0]], r, f[1])
	case 1:
		g.emit("ldxdw %%r%d, [%%r10-%d]", r, pick(g.rng, 8, 16, 64))
	default:
		g.emit("ldxw %%r%d, [%%r6+%d]", r, pick(g.rng, 0, 4, 16, 32, 68))
	}
	g.regs[r] = preg{k: oScalar}
}

// bound bounds the number in r so that r+w <= room: with a mask, with
// comparisons (unsigned, signed, 32-bit), a modulo or a sign extension.
// skip is the label jumped to when the value is out of range. It returns
// the bound believed to hold.
func (g *pgen) bound(r int, room, w int, skip string) {
	lim := room - w // largest good offset
	if lim < 0 {
		lim = 0
	}
	off1 := 0
	if g.chance(1, 8) {
		off1 = 1 // off by one
	}
	switch g.rng.IntN(10) {
	case 0, 1:
		g.tag(tagBoundAnd)
		m := 1
		for m*2-1 <= lim {
			m *= 2
		}
		m = m - 1 + off1*m
		g.emit("and %%r%d, %d", r, m)
	case 2:
		g.tag(tagBoundCmp)
		g.emit("%s %%r%d, %d, %s", pick(g.rng, "jgt", "jgt", "jsgt"), r, lim+off1, skip)
		if g.chance(1, 2) {
			g.emit("jslt %%r%d, 0, %s", r, skip)
		}
	case 3:
		g.tag(tagBoundCmp)
		g.emit("jlt %%r%d, %d, +1", r, lim+1+off1)
		g.emit("ja %s", skip)
	case 4:
		g.tag(tagBoundCmp32)
		op := pick(g.rng, "jgt32", "jge32", "jsgt32")
		k := lim + off1
		if op == "jge32" {
			k++
		}
		g.emit("%s %%r%d, %d, %s", op, r, k, skip)
		if op == "jsgt32" || g.chance(1, 4) {
			g.emit("jslt32 %%r%d, 0, %s", r, skip)
		}
		if g.chance(1, 3) {
			g.emit("mov32 %%r%d, %%r%d", r, r)
		}
	case 5:
		g.tag(tagSext)
		g.tag(tagBoundSigned)
		// int index checked on both sides, then sign-extended
		g.emit("jsgt32 %%r%d, %d, %s", r, lim+off1, skip)
		if !g.chance(1, 8) {
			g.emit("jslt32 %%r%d, 0, %s", r, skip)
		}
		if g.chance(1, 2) {
			g.emit("movsx3264 %%r%d, %%r%d", r, r)
		} else {
			g.emit("lsh %%r%d, 32", r)
			g.emit("arsh %%r%d, 32", r)
		}
	case 6:
		g.tag(tagBoundSigned)
		g.emit("jsgt %%r%d, %d, %s", r, lim+off1, skip)
		if !g.chance(1, 6) {
			g.emit("jslt %%r%d, %d, %s", r, pick(g.rng, 0, 0, 0, -1), skip)
		}
	case 7:
		g.tag(tagBoundAnd)
		g.emit("mod %%r%d, %d", r, lim+1+off1)
	case 9:
		// (unsigned)(i - lo) <= lim - lo as clang emits it: a 32-bit
		// copy of i - lo is compared, i itself is used (bounded only
		// when it fits in 32 bits)
		g.tag(tagBoundSub32)
		lo := g.rng.IntN(lim + 1)
		g.emit("mov32 %%r4, %%r2")
		if g.chance(1, 2) {
			g.emit("add32 %%r4, %d", -lo)
		} else {
			g.emit("sub32 %%r4, %d", lo)
		}
		if g.chance(1, 8) {
			g.emit("add %%r2, %d", pick(g.rng, 1, -1)) // the index moves after the copy
		}
		g.emit("jgt32 %%r4, %d, %s", lim-lo+off1, skip)
	default:
		// 32-bit arithmetic on a bounded offset: wraps at 2^32
		g.tag(tagBound32)
		g.emit("and32 %%r%d, %d", r, max(lim/2, 1))
		g.emit("%s %%r%d, %d", pick(g.rng, "add32", "add32", "sub32", "add"), r, pick(g.rng, 1, lim/2, -1))
	}
}

func (g *pgen) construction() {
	switch g.rng.IntN(16) {
	case 0, 1:
		p := g.ptrReg()
		g.access(p, g.regs[p], pick(g.rng, 0, 1, 2))
	case 2:
		g.arithConst()
	case 3, 4:
		g.arithVar()
	case 5, 6:
		g.join()
	case 7:
		g.ptrSub()
	case 8:
		g.compare()
	case 9:
		g.spill()
	case 10:
		g.loop()
	case 11:
		g.subprog()
	case 12:
		g.helperMem()
	case 13:
		if g.chance(1, 2) {
			g.ringJoin()
		} else {
			g.spillScalar()
		}
	case 14:
		if g.chance(1, 2) {
			g.linksOverflow()
		} else {
			g.compare()
		}
	default:
		g.arithVar()
	}
}

// arithConst moves a pointer register by a constant.
func (g *pgen) arithConst() {
	g.tag(tagArithConst)
	p := g.ptrReg()
	if p == 6 || p == 9 && g.regs[9].k == oRing || g.chance(1, 3) {
		// r6 stays the context; a moved record cannot be released:
		// work on a copy
		g.emit("mov %%r4, %%r%d", p)
		g.regs[4] = g.regs[p]
		p = 4
	}
	pr := g.regs[p]
	k := pick(g.rng, 4, 8, pr.room/2, pr.room-8, pr.room, -4, 1<<20)
	if pr.k == oCtx {
		k = pick(g.rng, 4, 8, 16, 32)
	}
	if g.chance(1, 3) {
		g.emit("add %%r%d, %d", p, k)
	} else {
		g.emit("sub %%r%d, %d", p, -k)
	}
	pr.room -= k
	pr.lo += k
	g.regs[p] = pr
	if g.chance(2, 3) {
		g.access(p, pr, 0)
	}
}

// arithVar adds a bounded unknown number to a copy of a pointer and
// accesses memory through it.
func (g *pgen) arithVar() {
	g.tag(tagArithVar)
	p := g.memReg()
	pr := g.regs[p]
	w := g.width()
	skip := g.label("skip")
	g.loadScalar(2)
	if pr.k == oCtx {
		// only constants move the context: this must be refused
		g.emit("and %%r2, 4")
	} else {
		g.bound(2, pr.room, w, skip)
	}
	if g.chance(1, 4) && pr.room >= 4*w {
		g.emit("rsh %%r2, 2")
		g.emit("lsh %%r2, 2")
	}
	g.emit("mov %%r3, %%r%d", p)
	if g.chance(1, 2) {
		g.emit("add %%r3, %%r2")
	} else {
		g.emit("add %%r2, %%r3")
		g.emit("mov %%r3, %%r2")
	}
	if g.chance(1, 2) || pr.ro {
		g.tag(tagLoad)
		g.emit("ldx%s %%r0, [%%r3+0]", widthSfx[w])
	} else {
		g.tag(tagStore)
		g.emit("st%s [%%r3+0], %d", widthSfx[w], g.small())
	}
	g.emit("%s:", skip)
	g.clobberTemps()
}

func (g *pgen) clobberTemps() {
	for r := 0; r <= 5; r++ {
		g.regs[r] = preg{}
	}
}

// join makes a register hold one of two pointers depending on a
// condition, then uses it: an access within both objects, the difference
// with one of the originals added back, or keeps it for later.
func (g *pgen) join() {
	g.tag(tagJoin)
	a, b := g.ptrReg(), g.ptrReg()
	for i := 0; i < 6 && a == b; i++ {
		b = g.ptrReg()
	}
	pa, pb := g.regs[a], g.regs[b]
	dst := 4
	if g.chance(1, 3) && a != 9 && b != 9 {
		dst = pick(g.rng, 7, 8)
	}
	la, lm := g.label("j"), g.label("m")
	g.loadScalar(1)
	g.emit("%s %%r1, %d, %s", pick(g.rng, "jgt", "jeq", "jset", "jsgt"), g.small(), la)
	g.emit("mov %%r%d, %%r%d", dst, a)
	if g.chance(1, 3) {
		g.emit("add %%r%d, %d", dst, pick(g.rng, 8, 16))
		pa.room -= 8
		pa.lo += 8
	}
	g.emit("ja %s", lm)
	g.emit("%s:", la)
	g.emit("mov %%r%d, %%r%d", dst, b)
	g.emit("%s:", lm)
	j := preg{k: oJoined, room: min(pa.room, pb.room), lo: min(pa.lo, pb.lo), ro: pa.ro || pb.ro}
	if pa.k == pb.k && pa.k != oRing {
		j.k = pa.k
	}
	if pa.k == oCtx || pb.k == oCtx {
		j.k = oCtx
	}
	g.regs[dst] = j
	switch g.rng.IntN(4) {
	case 0:
		g.access(dst, j, 0)
	case 1:
		// joined - original: 0 on one path, the distance between the
		// objects on the other; added back to a pointer it reaches the
		// other object from the first.
		g.tag(tagJoinSub)
		g.emit("mov %%r5, %%r%d", dst)
		g.emit("sub %%r5, %%r%d", pick(g.rng, a, b))
		base := pick(g.rng, a, b)
		g.emit("mov %%r3, %%r%d", base)
		g.emit("add %%r3, %%r5")
		if g.chance(1, 2) {
			g.emit("ldxb %%r0, [%%r3+0]")
		} else {
			g.emit("stb [%%r3+0], 1")
		}
		if g.chance(1, 3) {
			g.emit("mov %%r0, %%r5")
			g.maybeExit()
		}
	case 2:
		g.spillOf(dst)
	default:
		g.compareOf(dst, j)
	}
	if dst == 4 {
		g.clobberTemps()
	}
}

// ptrSub subtracts two pointers, of the same object or not, and uses the
// difference as an offset.
func (g *pgen) ptrSub() {
	g.tag(tagPtrSub)
	p := g.memReg()
	pr := g.regs[p]
	q := p
	k := pick(g.rng, 0, 4, 8, pr.room-1, pr.room)
	if g.chance(1, 4) {
		q = g.ptrReg()
	}
	g.emit("mov %%r3, %%r%d", q)
	g.emit("add %%r3, %d", k)
	g.emit("mov %%r4, %%r3")
	g.emit("sub %%r4, %%r%d", p)
	if g.chance(1, 2) {
		g.emit("mov %%r3, %%r%d", p)
		g.emit("add %%r3, %%r4")
		g.emit("ldxb %%r0, [%%r3+0]")
	} else {
		g.emit("mov %%r0, %%r4")
		g.maybeExit()
	}
	g.clobberTemps()
}

// compare compares pointers (with each other, with constants, with
// numbers) and accesses memory in a branch that only a correct reading of
// the comparison makes safe.
func (g *pgen) compare() {
	p := g.memReg()
	g.compareOf(p, g.regs[p])
	g.clobberTemps()
}

func (g *pgen) compareOf(p int, pr preg) {
	skip := g.label("c")
	w := g.width()
	cmp := func(op, a, b string) {
		if strings.HasSuffix(op, "32") {
			g.tag(tagCmp32)
		}
		if strings.HasPrefix(op, "js") {
			g.tag(tagCmpSigned)
		}
		g.emit("%s %s, %s, %s", op, a, b, skip)
	}
	switch g.rng.IntN(5) {
	case 0, 1:
		// cursor against an end pointer of the same object
		g.tag(tagCmpPtrPtr)
		g.loadScalar(2)
		if g.chance(1, 2) {
			g.emit("and %%r2, %d", pick(g.rng, 63, 255, 4095))
		}
		g.emit("mov %%r3, %%r%d", p)
		g.emit("add %%r3, %%r2")
		g.emit("mov %%r4, %%r%d", p)
		g.emit("add %%r4, %d", max(pr.room-w, 0)+pick(g.rng, 0, 0, 0, 1))
		switch g.rng.IntN(4) {
		case 0:
			cmp(pick(g.rng, "jgt", "jsgt", "jgt32", "jsgt32"), "%r3", "%r4")
		case 1:
			cmp(pick(g.rng, "jlt", "jslt", "jlt32"), "%r4", "%r3")
		case 2:
			cmp(pick(g.rng, "jge", "jsge"), "%r3", "%r4")
		default:
			// r3 < start?
			g.emit("mov %%r5, %%r%d", p)
			cmp(pick(g.rng, "jlt", "jslt"), "%r3", "%r5")
			cmp(pick(g.rng, "jgt", "jsgt"), "%r3", "%r4")
		}
		if g.chance(1, 2) || pr.ro {
			g.emit("ldx%s %%r0, [%%r3+0]", widthSfx[w])
		} else {
			g.emit("st%s [%%r3+0], 1", widthSfx[w])
		}
	case 2:
		// pointer against a number
		g.tag(tagCmpPtrK)
		if g.chance(1, 2) {
			cmp(pick(g.rng, "jeq", "jne", "jgt", "jlt", "jsgt", "jslt", "jeq32", "jne32", "jgt32"), fmt.Sprintf("%%r%d", p), fmt.Sprint(pick(g.rng, 0, 0, 1, -1, 4096)))
		} else {
			g.loadScalar(2)
			cmp(pick(g.rng, "jeq", "jne", "jgt", "jlt", "jsge", "jle32"), fmt.Sprintf("%%r%d", p), "%r2")
		}
		g.access(p, pr, 0)
	case 3:
		// two pointers, possibly of different objects
		g.tag(tagCmpPtrPtr)
		q := g.ptrReg()
		cmp(pick(g.rng, "jeq", "jne", "jgt", "jle", "jsgt", "jslt", "jgt32"), fmt.Sprintf("%%r%d", p), fmt.Sprintf("%%r%d", q))
		g.access(p, pr, 0)
	default:
		// a moved pointer compared with the original: offset bound
		g.tag(tagCmpPtrPtr)
		g.loadScalar(2)
		g.emit("mov %%r3, %%r%d", p)
		g.emit("add %%r3, %%r2")
		g.emit("mov %%r4, %%r%d", p)
		g.emit("add %%r4, %d", max(pr.room-w, 0))
		cmp(pick(g.rng, "jgt", "jsgt", "jgt32"), "%r3", "%r4")
		cmp(pick(g.rng, "jlt", "jslt", "jlt32"), "%r3", fmt.Sprintf("%%r%d", p))
		g.emit("ldx%s %%r0, [%%r3+0]", widthSfx[w])
	}
	g.emit("%s:", skip)
}

// spill stores a pointer on the stack, maybe overwrites part of it, and
// loads it back.
func (g *pgen) spill() {
	p := g.ptrReg()
	g.spillOf(p)
	g.clobberTemps()
}

func (g *pgen) spillOf(p int) {
	g.tag(tagSpillPtr)
	pr := g.regs[p]
	off := pick(g.rng, -80, -88, -96, -128, -8, -64)
	if g.chance(1, 15) {
		off += pick(g.rng, 4, -4)
	}
	g.emit("stxdw [%%r10%+d], %%r%d", off, p)
	if g.chance(1, 4) {
		g.tag(tagPartial)
		w := pick(g.rng, 1, 2, 4)
		at := off + pick(g.rng, 0, 4, 6, 7)
		if at+w > off+8 {
			at = off + 8 - w
		}
		if g.chance(1, 2) {
			g.emit("st%s [%%r10%+d], %d", widthSfx[w], at, g.small())
		} else {
			g.emit("stx%s [%%r10%+d], %%r%d", widthSfx[w], at, g.scalarReg())
		}
	}
	if g.chance(1, 2) {
		// a stack pointer may overwrite the slot
		if g.regs[7].k == oStack && g.chance(1, 3) {
			g.emit("stdw [%%r7+0], 0")
		}
	}
	dst := pick(g.rng, 3, 3, 4)
	if g.chance(1, 10) {
		g.tag(tagNarrowFill)
		g.emit("ldxw %%r%d, [%%r10%+d]", dst, off)
	} else {
		g.emit("ldxdw %%r%d, [%%r10%+d]", dst, off)
	}
	g.access(dst, pr, 0)
}

// spillScalar spills a bounded number, overwrites part of it (or not) and
// uses the reloaded value as an offset.
func (g *pgen) spillScalar() {
	g.tag(tagSpillScal)
	p := g.memReg()
	pr := g.regs[p]
	off := pick(g.rng, -80, -88, -136)
	skip := g.label("s")
	g.loadScalar(2)
	g.bound(2, pr.room, 1, skip)
	g.emit("stx%s [%%r10%+d], %%r2", pick(g.rng, "dw", "dw", "w"), off)
	if g.chance(1, 3) {
		g.tag(tagPartial)
		g.emit("st%s [%%r10%+d], %d", pick(g.rng, "b", "h"), off+pick(g.rng, 0, 1, 2, 4, 6), pick(g.rng, 0, 1, 255, -1))
	}
	if g.chance(1, 4) {
		g.tag(tagNarrowFill)
		g.emit("ldx%s %%r2, [%%r10%+d]", pick(g.rng, "b", "h", "w"), off)
	} else {
		g.emit("ldxdw %%r2, [%%r10%+d]", off)
	}
	g.emit("mov %%r3, %%r%d", p)
	g.emit("add %%r3, %%r2")
	g.emit("ldxb %%r0, [%%r3+0]")
	g.emit("%s:", skip)
	g.clobberTemps()
}

// loop emits a bounded loop over an object: a counter in a register or in
// a stack slot, or a moving pointer compared with an end pointer.
func (g *pgen) loop() {
	g.tag(tagLoop)
	p := g.memReg()
	pr := g.regs[p]
	top := g.label("loop")
	w := pick(g.rng, 1, 4, 8)
	n := max(pr.room/w, 1) + pick(g.rng, 0, 0, 0, 1)
	shift := map[int]int{1: 0, 4: 2, 8: 3}[w]
	access := func(r string) {
		if g.chance(1, 2) || pr.ro {
			g.emit("ldx%s %%r0, [%s+0]", widthSfx[w], r)
			g.emit("add %%r5, %%r0")
		} else {
			g.emit("st%s [%s+0], 3", widthSfx[w], r)
		}
	}
	g.emit("mov %%r5, 0")
	switch g.rng.IntN(3) {
	case 0:
		g.emit("mov %%r2, 0")
		g.emit("%s:", top)
		g.emit("mov %%r3, %%r2")
		g.emit("lsh %%r3, %d", shift)
		g.emit("mov %%r4, %%r%d", p)
		g.emit("add %%r4, %%r3")
		access("%r4")
		g.emit("add %%r2, 1")
		g.emit("%s %%r2, %d, %s", pick(g.rng, "jlt", "jslt", "jlt32", "jne"), n, top)
	case 1:
		g.tag(tagLoopStack)
		cw := pick(g.rng, "w", "dw", "w")
		g.emit("st%s [%%r10-144], 0", cw)
		g.emit("%s:", top)
		g.emit("ldx%s %%r2, [%%r10-144]", cw)
		g.emit("mov %%r3, %%r2")
		g.emit("lsh %%r3, %d", shift)
		g.emit("mov %%r4, %%r%d", p)
		g.emit("add %%r4, %%r3")
		access("%r4")
		g.emit("add %%r2, 1")
		g.emit("stx%s [%%r10-144], %%r2", cw)
		g.emit("%s %%r2, %d, %s", pick(g.rng, "jlt", "jlt32", "jslt32"), n, top)
	default:
		g.tag(tagLoopPtr)
		g.emit("mov %%r4, %%r%d", p)
		g.emit("mov %%r1, %%r%d", p)
		g.emit("add %%r1, %d", (n-1)*w)
		g.emit("%s:", top)
		access("%r4")
		g.emit("add %%r4, %d", w)
		g.emit("%s %%r4, %%r1, %s", pick(g.rng, "jle", "jle", "jsle", "jne"), top)
	}
	g.emit("mov %%r0, %%r5")
	g.clobberTemps()
}

// subprog passes a pointer and a number to a subprogram.
func (g *pgen) subprog() {
	g.tag(tagSub)
	p := g.ptrReg()
	pr := g.regs[p]
	f := pick(g.rng, "f_acc", "f_acc", "f_ret", "f_store", "f_nest", "f_ctx")
	g.funcs[f] = true
	if f == "f_nest" {
		g.funcs["f_acc"] = true
	}
	if g.chance(1, 3) {
		// the caller's stack passed down
		g.emit("mov %%r1, %%r10")
		g.emit("add %%r1, -64")
		pr = preg{k: oStack, room: 64}
	} else {
		g.emit("mov %%r1, %%r%d", p)
	}
	g.loadScalar(2)
	if g.chance(3, 4) {
		g.emit("and %%r2, %d", pick(g.rng, 7, 7, 15, 63))
	}
	g.emit("call local %s", f)
	g.clobberTemps()
	if f == "f_ret" {
		g.tag(tagSubRet)
		pr.room -= 8
		g.regs[0] = pr
		g.access(0, pr, 1)
	}
}

func (g *pgen) emitFuncs() {
	for _, f := range []string{"f_acc", "f_ret", "f_store", "f_nest", "f_ctx"} {
		if !g.funcs[f] {
			continue
		}
		g.emit("%s:", f)
		switch f {
		case "f_acc": // r1[r2] for r2 < 8
			g.emit("mov %%r0, 0")
			g.emit("jgt %%r2, 7, +3")
			g.emit("add %%r1, %%r2")
			g.emit("ldxb %%r0, [%%r1+0]")
			g.emit("and %%r0, 127")
		case "f_ret": // r1 + 8
			g.emit("mov %%r0, %%r1")
			g.emit("add %%r0, 8")
		case "f_store": // r1[r2 & 7] = r2
			g.emit("and %%r2, 7")
			g.emit("add %%r1, %%r2")
			g.emit("stxb [%%r1+0], %%r2")
			g.emit("mov %%r0, %%r2")
		case "f_nest": // f_acc(r1 + 4, r2)
			g.emit("add %%r1, 4")
			g.emit("call local f_acc")
			g.emit("add %%r0, 1")
		case "f_ctx": // spills its pointer on its own stack
			g.emit("stxdw [%%r10-8], %%r1")
			g.emit("stw [%%r10-16], 7")
			g.emit("ldxdw %%r3, [%%r10-8]")
			g.emit("ldxb %%r0, [%%r3+0]")
		}
		g.emit("exit")
	}
}

// helperMem passes pointers to helpers that read memory.
func (g *pgen) helperMem() {
	g.tag(tagHelperMem)
	p := g.memReg()
	pr := g.regs[p]
	switch g.rng.IntN(4) {
	case 0: // map_update(arr or hash, key, value)
		m, vs := pick(g.rng, 0, 0, 1, 3), 48
		if m == 1 {
			vs = 8
		}
		if m == 3 {
			vs = 16
		}
		if m == 1 {
			g.emit("stdw [%%r10-72], %d", g.rng.IntN(8))
		} else {
			g.emit("stw [%%r10-72], %d", pick(g.rng, 0, 3, 15))
		}
		g.emit("lddw %%r1, map(%d)", m)
		g.emit("mov %%r2, %%r10")
		g.emit("add %%r2, -72")
		if g.chance(1, 4) {
			g.emit("mov %%r2, %%r%d", p)
		}
		g.emit("mov %%r3, %%r%d", p)
		if pr.room < vs && g.chance(1, 2) {
			g.emit("mov %%r3, %%r10")
			g.emit("add %%r3, -64")
		}
		g.emit("mov %%r4, 0")
		g.emit("call 2")
	case 1: // ringbuf_output(rb, p, n)
		g.emit("lddw %%r1, map(2)")
		g.emit("mov %%r2, %%r%d", p)
		if g.chance(1, 2) {
			g.emit("mov %%r3, %d", max(pr.room, 1)+pick(g.rng, 0, 0, 0, 1))
		} else {
			g.loadScalar(3)
			g.emit("and %%r3, %d", pick(g.rng, 7, 15, 63))
			g.emit("add %%r3, 1")
		}
		g.emit("mov %%r4, 0")
		g.emit("call 130")
	case 2: // printk with a format on the stack
		g.tag(tagPrintk)
		nargs := g.rng.IntN(4)
		fmtStr := "p" + strings.Repeat(" %d", nargs)
		for len(fmtStr)%8 != 7 {
			fmtStr += " "
		}
		b := []byte(fmtStr + "\x00")
		for i := 0; i < len(b); i += 8 {
			var v uint64
			for j := 7; j >= 0; j-- {
				v = v<<8 | uint64(b[i+j])
			}
			g.emit("lddw %%r1, %#x", v)
			g.emit("stxdw [%%r10%+d], %%r1", -176+i)
		}
		g.emit("mov %%r1, %%r10")
		g.emit("add %%r1, -176")
		g.emit("mov %%r2, %d", len(b))
		for i := 0; i < nargs; i++ {
			switch {
			case g.chance(1, 12):
				// not set: refused, or the helper prints old register contents
			case g.chance(1, 8):
				g.emit("mov %%r%d, %%r%d", 3+i, p)
			default:
				g.emit("ldxw %%r%d, [%%r6+%d]", 3+i, pick(g.rng, 0, 4, 16))
			}
		}
		g.emit("call 6")
	default: // map_update with a value in a ring record or map value
		g.emit("stw [%%r10-72], 1")
		g.emit("lddw %%r1, map(%d)", pick(g.rng, 1, 3, 0))
		g.emit("mov %%r2, %%r10")
		g.emit("add %%r2, -72")
		g.emit("mov %%r3, %%r%d", g.ptrReg())
		g.emit("mov %%r4, %d", pick(g.rng, 0, 0, 1, 2))
		g.emit("call 2")
	}
	g.clobberTemps()
}

// ringJoin reserves a second record and merges it with the first: the
// merged pointer may be written, and both records must then be released
// separately; releasing the merged one releases only one of them.
func (g *pgen) ringJoin() {
	if len(g.rings) == 0 || g.regs[9].k != oRing {
		g.reserve(9)
		return
	}
	g.tag(tagRingJoin)
	// second record in r8
	size := pick(g.rng, 8, 16)
	g.emit("lddw %%r1, map(2)")
	g.emit("mov %%r2, %d", size)
	g.emit("mov %%r3, 0")
	g.emit("call 131")
	ok := g.label("rok")
	g.emit("jne %%r0, 0, %s", ok)
	g.bail()
	g.emit("%s:", ok)
	g.emit("mov %%r8, %%r0")
	la, lm := g.label("rj"), g.label("rm")
	g.loadScalar(1)
	g.emit("jgt %%r1, %d, %s", g.small(), la)
	g.emit("mov %%r7, %%r8")
	g.emit("ja %s", lm)
	g.emit("%s:", la)
	g.emit("mov %%r7, %%r9")
	g.emit("%s:", lm)
	g.emit("stb [%%r7+0], 1")
	switch g.rng.IntN(3) {
	case 0: // correct: release both by their own registers
		g.emit("mov %%r1, %%r8")
		g.emit("mov %%r2, 0")
		g.emit("call %d", pick(g.rng, 132, 133))
	case 1: // release the merged one, then the first
		g.tag(tagRingUse)
		g.emit("mov %%r1, %%r7")
		g.emit("mov %%r2, 0")
		g.emit("call 132")
		g.emit("stb [%%r8+0], 2")
		g.emit("mov %%r1, %%r8")
		g.emit("mov %%r2, 0")
		g.emit("call 132")
	default: // release one, write through the merged
		g.tag(tagRingUse)
		g.emit("mov %%r1, %%r8")
		g.emit("mov %%r2, 0")
		g.emit("call 132")
		g.emit("stb [%%r7+0], 3")
	}
	g.regs[7] = preg{k: oScalar}
	g.regs[8] = preg{k: oScalar}
	g.clobberTemps()
}

// maybeExit returns r0 & 255 (usually; a number derived from pointers
// then escapes) when a context field is zero.
func (g *pgen) maybeExit() {
	cont := g.label("cont")
	if !g.chance(1, 10) {
		g.emit("and %%r0, 255")
	}
	g.emit("ldxw %%r1, [%%r10-64]")
	g.emit("jne %%r1, 0, %s", cont)
	if len(g.rings) > 0 && g.regs[9].k == oRing {
		g.emit("mov %%r7, %%r0")
		g.emit("mov %%r1, %%r9")
		g.emit("mov %%r2, 0")
		g.emit("call 133")
		g.emit("mov %%r0, %%r7")
		g.regs[7] = preg{k: oScalar}
	}
	g.emit("exit")
	g.emit("%s:", cont)
}

// linksOverflow builds many pairs of copies of unknown numbers (more than
// a state-pruning table of links may hold) and one pair that is a copy on
// one path and two unrelated numbers on the other; after the merge point
// one member is bounded and the other used as an offset. Only the path
// where they are copies is safe: a stored state that forgot the link must
// not cover the other.
func (g *pgen) linksOverflow() {
	g.tag(tagLinks)
	n := 15 + g.rng.IntN(5)
	ta, tb := -184, -192
	if g.chance(1, 2) {
		ta, tb = -200-16*n, -208-16*n
	}
	if ta < -504 {
		ta, tb = -184, -192
	}
	for i := 0; i < n; i++ {
		g.emit("ldxw %%r1, [%%r6+%d]", pick(g.rng, 0, 4, 16, 32, 68))
		g.emit("mov %%r3, %%r1")
		g.emit("stxdw [%%r10%+d], %%r1", -200-16*i)
		g.emit("stxdw [%%r10%+d], %%r3", -208-16*i)
	}
	other, merge, skip := g.label("lo"), g.label("lm"), g.label("ls")
	g.emit("ldxdw %%r2, [%%r6+8]")
	g.emit("ldxw %%r1, [%%r6+%d]", pick(g.rng, 0, 4))
	g.emit("%s %%r1, %d, %s", pick(g.rng, "jset", "jgt", "jeq"), pick(g.rng, 1, 7), other)
	linked := func() {
		g.emit("mov %%r3, %%r2")
		g.emit("stxdw [%%r10%+d], %%r2", ta)
		g.emit("stxdw [%%r10%+d], %%r3", tb)
	}
	unlinked := func() {
		g.emit("stxdw [%%r10%+d], %%r2", ta)
		g.emit("ldxw %%r4, [%%r6+%d]", pick(g.rng, 4, 16, 32, 68))
		g.emit("stxdw [%%r10%+d], %%r4", tb)
	}
	first, second := linked, unlinked
	if g.chance(1, 2) {
		first, second = unlinked, linked
	}
	first()
	g.emit("ja %s", merge)
	g.emit("%s:", other)
	second()
	g.emit("%s:", merge)
	g.emit("ldxdw %%r2, [%%r10%+d]", ta)
	g.emit("jgt %%r2, 63, %s", skip)
	g.emit("ldxdw %%r5, [%%r10%+d]", tb)
	g.emit("mov %%r3, %%r10")
	g.emit("add %%r3, -64")
	g.emit("add %%r3, %%r5")
	g.emit("ldxb %%r0, [%%r3+0]")
	g.emit("%s:", skip)
	g.clobberTemps()
}

// ret sets r0 and releases live records.
func (g *pgen) ret() {
	switch g.rng.IntN(10) {
	case 0:
		g.tag(tagRetWide)
		g.emit("lddw %%r0, %#x", pick(g.rng, uint64(0x100000005), uint64(0xffffffff00000001)))
	case 1:
		g.tag(tagRetPtr)
		p := g.ptrReg()
		g.emit("mov %%r0, %%r%d", p)
		if g.chance(2, 3) {
			g.emit("%s %%r0, %d", pick(g.rng, "and", "and32", "rsh", "mod"), pick(g.rng, 255, 12, 8))
		}
	case 2, 3:
		g.emit("ldxdw %%r0, [%%r10-%d]", pick(g.rng, 8, 64))
		g.emit("and %%r0, 255")
	case 4:
		g.loadScalar(0)
		g.emit("and32 %%r0, 127")
	default:
		g.emit("mov %%r0, %d", g.rng.IntN(4))
	}
	if len(g.rings) > 0 && g.regs[9].k == oRing {
		if g.chance(1, 3) {
			// released differently on two paths
			l := g.label("rel")
			g.emit("ldxw %%r1, [%%r10-64]")
			g.emit("mov %%r7, %%r0")
			g.emit("jgt %%r1, 5, %s", l)
			g.emit("mov %%r1, %%r9")
			g.emit("mov %%r2, 0")
			g.emit("call 132")
			g.emit("mov %%r0, %%r7")
			g.emit("exit")
			g.emit("%s:", l)
		} else {
			g.emit("mov %%r7, %%r0")
		}
		if !g.chance(1, 30) {
			g.emit("mov %%r1, %%r9")
			g.emit("mov %%r2, 0")
			g.emit("call %d", pick(g.rng, 132, 133))
		}
		g.emit("mov %%r0, %%r7")
	}
	g.emit("exit")
}
