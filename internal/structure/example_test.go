package structure_test

import (
	"fmt"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/internal/structure"
)

// A backend validates once and then walks the description: functions,
// the kind of each slot and the targets of jumps and calls.
func Example() {
	insns, _ := asm.Assemble(`
		mov %r0, 0
		jeq %r1, 0, out
		call local f
	out:
		exit
	f:
		mov %r0, 1
		exit`)
	p, err := structure.Validate(insns, structure.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, f := range p.Funcs {
		fmt.Printf("function %d: pcs %d..%d, calls at %v\n", i, f.Start, f.End-1, f.Calls)
	}
	for pc := 0; pc < p.Len(); pc = p.Next(pc) {
		switch k := p.Kind(pc); {
		case k.IsJump():
			fmt.Printf("pc %d jumps to %d\n", pc, p.Target(pc))
		case k == structure.LocalCall:
			fmt.Printf("pc %d calls function %d\n", pc, p.Callee(pc))
		}
	}
	// Output:
	// function 0: pcs 0..3, calls at [2]
	// function 1: pcs 4..5, calls at []
	// pc 1 jumps to 3
	// pc 2 calls function 1
}

// A fault carries the verifier's code and the pc at fault.
func ExampleValidate_error() {
	insns, _ := asm.Assemble("ja +3\nexit")
	_, err := structure.Validate(insns, structure.Options{})
	fmt.Println(err.Code, err.PC, err.Msg)
	// Output: E003 0 jump target pc 4 is outside the program (0..1)
}
