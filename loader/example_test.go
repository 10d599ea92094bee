package loader_test

import (
	"fmt"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/loader"
)

// Load an object and look at its programs, their functions, the maps they
// use and where a BPF-to-BPF call lands.
func ExampleLoadFile() {
	c, err := loader.LoadFile("../testdata/loader/policy.o")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range c.Programs {
		fmt.Printf("%-20s %-14s %2d slots, functions:", p.Section, p.Name, len(p.Insns))
		for _, f := range p.Funcs {
			fmt.Printf(" %s@%d", f.Name, f.Start)
		}
		fmt.Println()
	}
	p := c.Program("tuner_main")
	for pc, ins := range p.Insns {
		if ins.Op == asm.OpCall && ins.Src == asm.PseudoCall {
			target := pc + 1 + int(ins.Imm)
			fmt.Printf("pc %d calls %s (pc %d), line %d: %s\n", pc, p.FuncAt(target).Name, target, p.SourceAt(pc).Line, p.SourceAt(pc).Source)
		}
	}
	_, m := c.Map(".rodata")
	fmt.Printf("%s: %d bytes, read-only %v\n", m.Name, m.ValueSize, m.Freeze)
	// Output:
	// profiler/coll_end    on_coll_end    50 slots, functions: on_coll_end@0 pick_algo@36
	// profiler/coll_start  on_coll_start  19 slots, functions: on_coll_start@0
	// tuner                tuner_main     60 slots, functions: tuner_main@0 bump@32 pick_algo@46
	// pc 3 calls pick_algo (pc 46), line 89: __u32 algo = pick_algo(c->bytes); /* LINE:tuner_call */
	// pc 29 calls bump (pc 32), line 99: bump(0);
	// .rodata: 12 bytes, read-only true
}
