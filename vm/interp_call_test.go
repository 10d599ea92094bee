package vm

import (
	"errors"
	"testing"

	"github.com/ncclbpf/ncclbpf/asm"
)

func TestLocalCalls(t *testing.T) {
	// recurse(n) calls itself until depth n, returning n; main calls it.
	recurse := func(n int32) []ins {
		return prog(
			mov(r1, n), callLocal(1), exit(), // main
			jk(asm.ClassJMP, asm.JumpEq, r1, 0, 3), // f: if r1 == 0 return 7
			a64k(asm.ALUSub, r1, 1), callLocal(-3), exit(),
			mov(r0, 7), exit(),
		)
	}
	cases := []runCase{
		{name: "arguments and callee-saved registers", insns: prog(
			mov(r1, 1), mov(r2, 2), mov(r3, 3), mov(r4, 4), mov(r5, 5),
			mov(r6, 6), mov(r7, 7), mov(r8, 8), mov(r9, 9),
			callLocal(6),
			// r0 = r0*10000 + r6+r7+r8+r9 (30)
			a64k(asm.ALUMul, r0, 10000), a64x(asm.ALUAdd, r0, r6), a64x(asm.ALUAdd, r0, r7), a64x(asm.ALUAdd, r0, r8), a64x(asm.ALUAdd, r0, r9),
			exit(),
			// callee: r0 = r1+..+r5, clobber r6-r9
			movr(r0, r1), a64x(asm.ALUAdd, r0, r2), a64x(asm.ALUAdd, r0, r3), a64x(asm.ALUAdd, r0, r4), a64x(asm.ALUAdd, r0, r5),
			mov(r6, 0), mov(r7, 0), mov(r8, 0), mov(r9, 0), exit(),
		), want: 15*10000 + 30},
		{name: "callee sees caller r6", insns: prog(mov(r6, 41), callLocal(1), exit(), movr(r0, r6), a64k(asm.ALUAdd, r0, 1), exit()), want: 42},
		{name: "fresh stack per frame", insns: prog(
			st(DW, r10, -8, 11), callLocal(3), ldx(DW, r1, r10, -8), a64x(asm.ALUAdd, r0, r1), exit(),
			ldx(DW, r0, r10, -8), st(DW, r10, -8, 100), a64k(asm.ALUAdd, r0, 1), exit(),
		), want: 12},
		{name: "r10 restored", insns: prog(movr(r6, r10), callLocal(3), a64x(asm.ALUSub, r6, r10), movr(r0, r6), exit(), exit()), want: 0},
		{name: "callee frame is 512 bytes below caller", insns: prog(movr(r6, r10), callLocal(3), a64x(asm.ALUSub, r6, r0), movr(r0, r6), exit(),
			movr(r0, r10), exit()), want: asm.StackSize},
		{name: "callee reads caller stack by pointer", insns: prog(
			st(DW, r10, -8, 5), movr(r1, r10), a64k(asm.ALUAdd, r1, -8), callLocal(1), exit(),
			ldx(DW, r0, r1, 0), st(DW, r1, 0, 6), exit(),
		), want: 5},
		{name: "caller frame pointer after return is dead", insns: prog(
			callLocal(2), ldx(DW, r0, r0, 0), exit(),
			movr(r0, r10), a64k(asm.ALUAdd, r0, -8), exit(),
		), err: ErrMemory},
		{name: "depth 8 is allowed", insns: recurse(MaxCallDepth - 2), want: 7},
		{name: "depth 9 traps", insns: recurse(MaxCallDepth - 1), err: ErrCallDepth},
		{name: "unbounded recursion traps", insns: prog(callLocal(-1), exit()), err: ErrCallDepth},
	}
	runTable(t, cases, Program{})
}

func TestTrace(t *testing.T) {
	type step struct {
		pc, depth  int
		r0, fpByte uint64
	}
	var steps []step
	trace := WithTrace(func(s *TraceState) {
		steps = append(steps, step{s.PC, s.Depth, s.Regs[0], uint64(s.Stack[len(s.Stack)-1])})
	})
	x := compile(t, Program{Insns: prog(
		st(B, r10, -1, 9), mov(r0, 1), callLocal(1), exit(),
		st(B, r10, -1, 5), mov(r0, 2), exit(),
	)}, trace)
	if got, err := x.Run(nil); err != nil || got != 2 {
		t.Fatalf("Run = %d, %v", got, err)
	}
	want := []step{{0, 0, 0, 0}, {1, 0, 0, 9}, {2, 0, 1, 9}, {4, 1, 1, 0}, {5, 1, 1, 5}, {6, 1, 2, 5}, {3, 0, 2, 9}}
	if len(steps) != len(want) {
		t.Fatalf("trace = %v, want %v", steps, want)
	}
	for i := range want {
		if steps[i] != want[i] {
			t.Fatalf("step %d = %+v, want %+v (trace %v)", i, steps[i], want[i], steps)
		}
	}
}

func TestBudget(t *testing.T) {
	loop := prog(mov(r0, 0), ja(-1), exit())
	x := compile(t, Program{Insns: loop}, WithBudget(1000))
	if _, err := x.Run(nil); !errors.Is(err, ErrBudget) {
		t.Fatalf("infinite loop: err = %v, want ErrBudget", err)
	}
	var f *Fault
	if _, err := x.Run(nil); !errors.As(err, &f) || f.PC != 1 {
		t.Fatalf("budget fault %v, want pc 1", err)
	}
	// Exactly the budget is enough: 3 instructions.
	x = compile(t, Program{Insns: prog(mov(r0, 1), ja(0), exit())}, WithBudget(3))
	if got, err := x.Run(nil); err != nil || got != 1 {
		t.Fatalf("3 instructions with budget 3: %d, %v", got, err)
	}
	x = compile(t, Program{Insns: prog(mov(r0, 1), ja(0), exit())}, WithBudget(2))
	if _, err := x.Run(nil); !errors.Is(err, ErrBudget) {
		t.Fatalf("3 instructions with budget 2: %v", err)
	}
	// The default budget ends an infinite loop too.
	if testing.Short() {
		return
	}
	x = compile(t, Program{Insns: loop})
	if _, err := x.Run(nil); !errors.Is(err, ErrBudget) {
		t.Fatalf("default budget: %v", err)
	}
}

func TestConcurrentRuns(t *testing.T) {
	// r0 = sum of the 64 bytes of mem, computed through the stack.
	x := compile(t, Program{Insns: prog(
		mov(r0, 0), mov(r3, 0),
		ldx(B, r4, r1, 0), stx(DW, r10, r4, -8), ldx(DW, r4, r10, -8), a64x(asm.ALUAdd, r0, r4),
		a64k(asm.ALUAdd, r1, 1), a64k(asm.ALUAdd, r3, 1), jk(asm.ClassJMP, asm.JumpLT, r3, 64, -7),
		exit(),
	)})
	done := make(chan error)
	for g := range 8 {
		go func() {
			mem := make([]byte, 64)
			for i := range mem {
				mem[i] = byte(g)
			}
			for range 200 {
				got, err := x.Run(mem)
				if err == nil && got != uint64(64*g) {
					err = errors.New("wrong sum")
				}
				if err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
