package verifier

import (
	"fmt"
	"math/bits"
	"strings"

	"github.com/ncclbpf/ncclbpf/asm"
)

// stackSlots is the number of 8-byte slots in one frame's stack.
const stackSlots = asm.StackSize / 8

// stack is one frame's 512 bytes, addressed by offsets [-512, 0) from its
// r10. Byte b (b = 512+offset) is initialized when bit b of init is set.
// Slot i (bytes 8i..8i+7) holds a spilled register, pointer or scalar, when
// bit i of spill is set; its bytes are then all initialized.
//
// The spilled values are kept densely in slot order (vals[rank(i)] is
// slot i's), and vals is shared between clones of a state until one of
// them writes (copy on write): forks copy a few hundred bytes per frame.
type stack struct {
	init   [stackSlots / 8]uint64
	spill  uint64
	vals   []value
	shared bool // vals may be referenced by another stack
}

func (s *stack) isInit(b int) bool  { return s.init[b>>6]&(1<<(b&63)) != 0 }
func (s *stack) setInit(b int)      { s.init[b>>6] |= 1 << (b & 63) }
func (s *stack) clearInit(b int)    { s.init[b>>6] &^= 1 << (b & 63) }
func (s *stack) spilled(i int) bool { return s.spill&(1<<i) != 0 }
func (s *stack) rank(i int) int     { return bits.OnesCount64(s.spill & (1<<i - 1)) }

// slot returns the value spilled in slot i, which must be spilled.
func (s *stack) slot(i int) value { return s.vals[s.rank(i)] }

// own makes vals private to s before a write.
func (s *stack) own() {
	if s.shared {
		s.vals = append(make([]value, 0, len(s.vals)+2), s.vals...)
		s.shared = false
	}
}

// slotPtr returns slot i (spilled) for writing.
func (s *stack) slotPtr(i int) *value {
	s.own()
	return &s.vals[s.rank(i)]
}

// setSpill spills v into slot i (and initializes its bytes).
func (s *stack) setSpill(i int, v value) {
	s.putSpill(i, v)
	for b := 8 * i; b < 8*i+8; b++ {
		s.setInit(b)
	}
}

// putSpill spills v into slot i and leaves its bytes' init bits alone (a
// kHalves slot may have one half uninitialized).
func (s *stack) putSpill(i int, v value) {
	s.own()
	r := s.rank(i)
	if !s.spilled(i) {
		s.vals = append(s.vals, value{})
		copy(s.vals[r+1:], s.vals[r:])
		s.spill |= 1 << i
	}
	s.vals[r] = v
}

// unspill turns slot i back into plain bytes. A spilled pointer's bytes
// become uninitialized (so that no part of a pointer can be read back as
// a number); a spilled scalar's bytes stay initialized.
func (s *stack) unspill(i int) {
	if !s.spilled(i) {
		return
	}
	v := s.slot(i)
	ptr := v.isAddr()
	s.own()
	r := s.rank(i)
	s.vals = append(s.vals[:r], s.vals[r+1:]...)
	s.spill &^= 1 << i
	if ptr {
		for b := 8 * i; b < 8*i+8; b++ {
			s.clearInit(b)
		}
	}
}

// frame is one level of the BPF-to-BPF call chain.
type frame struct {
	regs     [asm.NumRegisters]value
	callsite int   // pc of the call that created the frame, -1 for the entry
	ctx      int32 // the call context (flow.go), when facts are gathered
	stk      stack
}

// state is the abstract machine state on one path.
type state struct {
	frames []frame
	// refs are the ids of ringbuf records reserved and not yet released.
	refs []uint32
}

func (st *state) top() *frame { return &st.frames[len(st.frames)-1] }

func (st *state) clone() *state {
	return st.cloneInto(&state{frames: make([]frame, len(st.frames))})
}

// cloneInto makes n (a new or recycled state that nothing else refers to)
// a clone of st and returns it.
func (st *state) cloneInto(n *state) *state {
	n.frames = append(n.frames[:0], st.frames...)
	n.refs = nil
	for i := range n.frames {
		if n.frames[i].stk.vals != nil {
			n.frames[i].stk.shared = true
			st.frames[i].stk.shared = true
		}
	}
	if len(st.refs) > 0 {
		n.refs = append([]uint32(nil), st.refs...)
	}
	return n
}

// update calls f on every register and spilled slot of every frame for
// which match is true; stack slots are copied (copy on write) only when
// one matches.
func (st *state) update(match func(v value) bool, f func(v *value)) {
	for fi := range st.frames {
		fr := &st.frames[fi]
		for r := range fr.regs {
			if match(fr.regs[r]) {
				f(&fr.regs[r])
			}
		}
		for k := range fr.stk.vals {
			if match(fr.stk.vals[k]) {
				fr.stk.own()
				f(&fr.stk.vals[k])
			}
		}
	}
}

// each calls f on every register and spilled slot, read-only.
func (st *state) each(f func(v value)) {
	for fi := range st.frames {
		fr := &st.frames[fi]
		for r := range fr.regs {
			f(fr.regs[r])
		}
		for _, v := range fr.stk.vals {
			f(v)
		}
	}
}

func (st *state) dropRef(id uint32) {
	for i, r := range st.refs {
		if r == id {
			st.refs = append(st.refs[:i], st.refs[i+1:]...)
			return
		}
	}
}

func (st *state) hasRef(id uint32) bool {
	for _, r := range st.refs {
		if r == id {
			return true
		}
	}
	return false
}

// idMap records which ids of an old state correspond to which ids of a
// new one during a subsumption test. The correspondence is one to one:
// values that share an id in old must share one in cur (old's proof may
// rely on it: a null check or a release reaches every copy), and values
// with different ids in old must have different ids in cur (old's proof
// may rely on that too: releasing one record leaves the other usable).
type idMap struct{ old, cur []uint32 }

func (m *idMap) match(o, c uint32) bool {
	if o == 0 {
		return true
	}
	if c == 0 {
		return false
	}
	for i, x := range m.old {
		if x == o {
			return m.cur[i] == c
		}
		if m.cur[i] == c {
			return false
		}
	}
	m.old = append(m.old, o)
	m.cur = append(m.cur, c)
	return true
}

// valueLeq reports whether every concrete value of c is one of o, with
// ids consistent with m.
func valueLeq(o, c value, m *idMap) bool {
	if o.k == kUninit {
		return true
	}
	if o.k != c.k || o.idx != c.idx || o.frame != c.frame {
		return false
	}
	if !o.s.contains(c.s) {
		return false
	}
	if o.id != 0 && (o.rel != c.rel || o.delta != c.delta) {
		return false
	}
	return m.match(o.id, c.id)
}

// leq reports whether cur is included in old: every execution from cur is
// one from old, so if old was proven safe, so is cur. Registers are
// compared before stacks, as they differ more often.
func leq(old, cur *state, m *idMap) bool {
	if len(old.frames) != len(cur.frames) || len(old.refs) != len(cur.refs) {
		return false
	}
	m.old, m.cur = m.old[:0], m.cur[:0]
	for fi := range old.frames {
		of, cf := &old.frames[fi], &cur.frames[fi]
		if of.callsite != cf.callsite {
			return false
		}
		for r := range of.regs {
			if !valueLeq(of.regs[r], cf.regs[r], m) {
				return false
			}
		}
	}
	for fi := range old.frames {
		if !stackLeq(&old.frames[fi].stk, &cur.frames[fi].stk, m) {
			return false
		}
	}
	for i := range old.refs {
		if !m.match(old.refs[i], cur.refs[i]) {
			return false
		}
	}
	return true
}

func stackLeq(o, c *stack, m *idMap) bool {
	for w := range o.init {
		if o.init[w]&^c.init[w] != 0 {
			return false
		}
	}
	if o.spill&^c.spill != 0 {
		return false
	}
	for bitsLeft := o.spill | c.spill; bitsLeft != 0; bitsLeft &= bitsLeft - 1 {
		i := bits.TrailingZeros64(bitsLeft)
		if o.spilled(i) {
			if !valueLeq(o.slot(i), c.slot(i), m) {
				return false
			}
		} else if v := c.slot(i); v.isAddr() {
			// old holds plain bytes there: reading them gives unknown
			// numbers, so cur must not hold a pointer
			return false
		}
	}
	return true
}

// describe renders the registers that hold something, for Info and
// messages.
func (st *state) describe(c *checker) string {
	var b strings.Builder
	for fi := range st.frames {
		fr := &st.frames[fi]
		if fi > 0 {
			fmt.Fprintf(&b, " | frame %d:", fi)
		}
		for r := 0; r < asm.NumRegisters-1; r++ {
			if fr.regs[r].k == kUninit {
				continue
			}
			fmt.Fprintf(&b, " r%d=%s", r, fr.regs[r].describe(c))
		}
		n := 0
		for bt := 0; bt < asm.StackSize; bt++ {
			if fr.stk.isInit(bt) {
				n++
			}
		}
		if n > 0 {
			fmt.Fprintf(&b, " stack:%dB", n)
		}
	}
	return strings.TrimSpace(b.String())
}
