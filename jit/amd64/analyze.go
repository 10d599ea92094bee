package amd64

import (
	"fmt"
	"sort"

	"github.com/ncclbpf/ncclbpf/asm"
)

// errAt formats a compile error at pc.
func errAt(pc int, ins asm.Instruction, format string, args ...any) error {
	return fmt.Errorf("pc %d (op %#02x): %s: %w", pc, uint8(ins.Op), fmt.Sprintf(format, args...), ErrInvalidProgram)
}

// analyze takes the program's validated structure (vm.Program.Validate)
// and derives what code generation needs from it: the functions, the
// second slots of LD_IMM64, whether calls need a run-time depth check,
// and the helper table.
func (c *compiler) analyze() error {
	n := len(c.insns)
	if n == 0 {
		return fmt.Errorf("no instructions: %w", ErrInvalidProgram)
	}
	if n > MaxInstructions {
		return fmt.Errorf("%d instructions, more than %d: %w", n, MaxInstructions, ErrInvalidProgram)
	}
	sp, serr := c.prog.Validate()
	if serr != nil {
		return errAt(serr.PC, c.insns[serr.PC], "%s", serr.Msg)
	}
	c.sp = sp
	c.second = make([]bool, n)
	c.funcOf = make([]int32, n)
	for pc := range n {
		c.second[pc] = sp.IsSecond(pc)
		c.funcOf[pc] = int32(sp.FuncOf(pc))
	}
	c.funcStart = c.funcStart[:0]
	for _, f := range sp.Funcs {
		c.funcStart = append(c.funcStart, int32(f.Start))
	}
	c.hasCallx = sp.HasCallx()
	c.depthCheck = sp.CheckCalls(MaxCallDepth) != nil
	for id, h := range c.prog.Helpers {
		if h.ID != id {
			return fmt.Errorf("helper table entry %d holds helper %d: %w", id, h.ID, ErrInvalidProgram)
		}
		if h.Addr == 0 {
			return fmt.Errorf("helper %v has no address: %w", id, ErrInvalidProgram)
		}
		c.helperIDs = append(c.helperIDs, int32(id))
	}
	sort.Slice(c.helperIDs, func(i, j int) bool { return c.helperIDs[i] < c.helperIDs[j] })
	if c.hasCallx && len(c.helperIDs) > 0 {
		maxID := c.helperIDs[len(c.helperIDs)-1]
		if c.helperIDs[0] < 0 || maxID >= maxCallxID {
			return fmt.Errorf("callx needs helper ids in [0, %d), the table has %d..%d: %w", maxCallxID, c.helperIDs[0], maxID, ErrInvalidProgram)
		}
		c.tableLen = maxID + 1
	}
	return nil
}

// maxCallxID bounds the ids callx can dispatch (the table is dense).
const maxCallxID = 1 << 12
