package analysis

import "github.com/ncclbpf/ncclbpf/internal/structure"

// RotateLoop reports whether the unconditional jump at pc, a back edge to
// a loop head that is a conditional exit ("head: if (c) goto out; body;
// goto head"), may be lowered as the head's test itself: "if (!c) goto
// head+1; goto out" (the second jump vanishes when out is pc+1), one
// branch per round instead of two. It returns the head's pc. The head is
// a conditional jump whose target is not head+1 and that is not a select
// (Select): the code at head+1 must be that instruction's own, which the
// rotated test enters as the head's fall-through did, with the same
// flags.
func (a *Info) RotateLoop(pc int) (head int, ok bool) {
	if a.Structure.Kind(pc) != structure.Goto {
		return 0, false
	}
	head = a.Structure.Target(pc)
	if head >= pc || a.Structure.Kind(head) != structure.Branch ||
		a.Structure.Target(head) == head+1 || a.Select(head) {
		return 0, false
	}
	return head, true
}
