package vm

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/ncclbpf/ncclbpf/asm"
)

// machine is the state of one Run: registers, call frames, the stacks of
// all frames and the regions helpers returned. Machines are pooled per
// executable; one machine serves one Run at a time.
type machine struct {
	regs     [asm.NumRegisters]uint64
	depth    int // index of the current frame; 0 is the main program
	frames   [MaxCallDepth]callFrame
	dyn      []region
	memStart uint64
	memLen   uint64
	memBase  unsafe.Pointer
	ts       TraceState // what WithTrace functions see
	// stack holds the frames from the top down: frame k occupies the
	// asm.StackSize bytes that end (k * asm.StackSize) bytes below the
	// end of the array, so the live frames are contiguous.
	stack [MaxCallDepth * asm.StackSize]byte
}

// callFrame is what a BPF-to-BPF call saves: where to return and the
// caller's callee-saved registers and frame pointer.
type callFrame struct {
	ret   int
	saved [4]uint64 // r6-r9
	fp    uint64
}

// stackTop is the address just past the stack array: r10 of frame 0.
func (m *machine) stackTop() uint64 {
	return uint64(uintptr(unsafe.Pointer(&m.stack[0]))) + uint64(len(m.stack))
}

// enterFrame zeroes the stack of frame k and returns its r10.
func (m *machine) enterFrame(k int) uint64 {
	end := len(m.stack) - k*asm.StackSize
	clear(m.stack[end-asm.StackSize : end])
	return m.stackTop() - uint64(k*asm.StackSize)
}

// traceState calls the trace function with the state at pc.
func (m *machine) traceState(x *interpExec, pc int) {
	end := len(m.stack) - m.depth*asm.StackSize
	m.ts = TraceState{PC: pc, Depth: m.depth, Regs: &m.regs, Stack: m.stack[end-asm.StackSize : end : end]}
	x.trace(&m.ts)
}

// Run executes the program on mem (r1 = &mem[0] or 0, r2 = len(mem)).
func (x *interpExec) Run(mem []byte) (r0 uint64, err error) {
	m := x.pool.Get().(*machine)
	defer func() {
		if p := recover(); p != nil {
			// A bug in the interpreter: report it rather than crash the
			// host, and drop the machine, whose state is unknown.
			r0, err = 0, &Fault{Program: x.name, PC: -1, Detail: fmt.Sprint(p), Err: ErrInternal}
			return
		}
		m.dyn = m.dyn[:0]
		m.memBase = nil
		x.pool.Put(m)
	}()
	m.regs = [asm.NumRegisters]uint64{}
	m.depth = 0
	m.memStart, m.memLen, m.memBase = 0, 0, nil
	if len(mem) > 0 {
		m.memBase = unsafe.Pointer(unsafe.SliceData(mem))
		m.memStart = uint64(uintptr(m.memBase))
		m.memLen = uint64(len(mem))
	}
	m.regs[1] = m.memStart
	m.regs[2] = uint64(len(mem))
	m.regs[10] = m.enterFrame(0)
	r0, err = m.run(x)
	runtime.KeepAlive(mem)
	return r0, err
}

// run is the interpreter loop: a switch over the fast paths (see
// interp_fast.go), then, for every other instruction, over the instruction
// class and the operation.
func (m *machine) run(x *interpExec) (uint64, error) {
	code := x.code
	regs := &m.regs
	budget := x.budget
	trace := x.trace
	pc := 0
	for {
		if budget == 0 {
			return 0, x.fault(pc, fmt.Sprintf("executed %d instructions without exiting", x.budget), ErrBudget)
		}
		budget--
		if trace != nil {
			m.traceState(x, pc)
		}
		in := &code[pc]
		switch in.fop {
		case fAdd64K:
			regs[in.dst] += in.k
		case fAdd64X:
			regs[in.dst] += regs[in.src]
		case fSub64K:
			regs[in.dst] -= in.k
		case fSub64X:
			regs[in.dst] -= regs[in.src]
		case fMul64K:
			regs[in.dst] *= in.k
		case fMul64X:
			regs[in.dst] *= regs[in.src]
		case fAnd64K:
			regs[in.dst] &= in.k
		case fAnd64X:
			regs[in.dst] &= regs[in.src]
		case fOr64K:
			regs[in.dst] |= in.k
		case fOr64X:
			regs[in.dst] |= regs[in.src]
		case fXor64K:
			regs[in.dst] ^= in.k
		case fXor64X:
			regs[in.dst] ^= regs[in.src]
		case fLsh64K:
			regs[in.dst] <<= in.k & 63
		case fLsh64X:
			regs[in.dst] <<= regs[in.src] & 63
		case fRsh64K:
			regs[in.dst] >>= in.k & 63
		case fRsh64X:
			regs[in.dst] >>= regs[in.src] & 63
		case fArsh64K:
			regs[in.dst] = uint64(int64(regs[in.dst]) >> (in.k & 63))
		case fArsh64X:
			regs[in.dst] = uint64(int64(regs[in.dst]) >> (regs[in.src] & 63))
		case fMov64K:
			regs[in.dst] = in.k
		case fMov64X:
			regs[in.dst] = regs[in.src]
		case fAdd32K:
			regs[in.dst] = uint64(uint32(regs[in.dst]) + uint32(in.k))
		case fAdd32X:
			regs[in.dst] = uint64(uint32(regs[in.dst]) + uint32(regs[in.src]))
		case fMov32K:
			regs[in.dst] = uint64(uint32(in.k))
		case fMov32X:
			regs[in.dst] = uint64(uint32(regs[in.src]))
		case fJa:
			pc = int(in.aux)
			continue
		case fJeqK:
			if regs[in.dst] == in.k {
				pc = int(in.aux)
				continue
			}
		case fJeqX:
			if regs[in.dst] == regs[in.src] {
				pc = int(in.aux)
				continue
			}
		case fJneK:
			if regs[in.dst] != in.k {
				pc = int(in.aux)
				continue
			}
		case fJneX:
			if regs[in.dst] != regs[in.src] {
				pc = int(in.aux)
				continue
			}
		case fJgtK:
			if regs[in.dst] > in.k {
				pc = int(in.aux)
				continue
			}
		case fJgtX:
			if regs[in.dst] > regs[in.src] {
				pc = int(in.aux)
				continue
			}
		case fJgeK:
			if regs[in.dst] >= in.k {
				pc = int(in.aux)
				continue
			}
		case fJgeX:
			if regs[in.dst] >= regs[in.src] {
				pc = int(in.aux)
				continue
			}
		case fJltK:
			if regs[in.dst] < in.k {
				pc = int(in.aux)
				continue
			}
		case fJltX:
			if regs[in.dst] < regs[in.src] {
				pc = int(in.aux)
				continue
			}
		case fJleK:
			if regs[in.dst] <= in.k {
				pc = int(in.aux)
				continue
			}
		case fJleX:
			if regs[in.dst] <= regs[in.src] {
				pc = int(in.aux)
				continue
			}
		case fJsgtK:
			if int64(regs[in.dst]) > int64(in.k) {
				pc = int(in.aux)
				continue
			}
		case fJsgtX:
			if int64(regs[in.dst]) > int64(regs[in.src]) {
				pc = int(in.aux)
				continue
			}
		case fJsgeK:
			if int64(regs[in.dst]) >= int64(in.k) {
				pc = int(in.aux)
				continue
			}
		case fJsgeX:
			if int64(regs[in.dst]) >= int64(regs[in.src]) {
				pc = int(in.aux)
				continue
			}
		case fJsltK:
			if int64(regs[in.dst]) < int64(in.k) {
				pc = int(in.aux)
				continue
			}
		case fJsltX:
			if int64(regs[in.dst]) < int64(regs[in.src]) {
				pc = int(in.aux)
				continue
			}
		case fJsleK:
			if int64(regs[in.dst]) <= int64(in.k) {
				pc = int(in.aux)
				continue
			}
		case fJsleX:
			if int64(regs[in.dst]) <= int64(regs[in.src]) {
				pc = int(in.aux)
				continue
			}
		case fLdImm64:
			regs[in.dst] = in.k
			pc += 2
			continue
		default:
			switch in.op.Class() {
			case asm.ClassALU64:
				s := in.k
				if in.op.Source() == asm.SourceX {
					s = regs[in.src]
				}
				regs[in.dst] = alu64(in, regs[in.dst], s)
			case asm.ClassALU:
				s := in.k
				if in.op.Source() == asm.SourceX {
					s = regs[in.src]
				}
				regs[in.dst] = alu32(in, regs[in.dst], s)
			case asm.ClassJMP, asm.ClassJMP32:
				switch op := in.op.JumpOp(); op {
				case asm.JumpA:
					pc = int(in.aux)
					continue
				case asm.JumpCall:
					next, stop, err := m.call(x, pc, in)
					if err != nil {
						return 0, err
					}
					if stop {
						return 0, nil
					}
					pc = next
					continue
				case asm.JumpExit:
					if m.depth == 0 {
						return regs[0], nil
					}
					m.depth--
					f := &m.frames[m.depth]
					regs[6], regs[7], regs[8], regs[9] = f.saved[0], f.saved[1], f.saved[2], f.saved[3]
					regs[10] = f.fp
					pc = f.ret
					continue
				default:
					s := in.k
					if in.op.Source() == asm.SourceX {
						s = regs[in.src]
					}
					var taken bool
					if in.op.Class() == asm.ClassJMP {
						taken = cond64(op, regs[in.dst], s)
					} else {
						taken = cond32(op, regs[in.dst], s)
					}
					if taken {
						pc = int(in.aux)
						continue
					}
				}
			case asm.ClassLDX:
				size := uint64(in.aux)
				addr := regs[in.src] + uint64(int64(in.off))
				p, err := m.translate(x, addr, size, false)
				if err != nil {
					return 0, x.memFault(pc, "load", addr, size, err)
				}
				if in.op.Mode() == asm.ModeMEMSX {
					regs[in.dst] = loadSigned(p, size)
				} else {
					regs[in.dst] = load(p, size)
				}
			case asm.ClassST:
				size := uint64(in.aux)
				addr := regs[in.dst] + uint64(int64(in.off))
				p, err := m.translate(x, addr, size, true)
				if err != nil {
					return 0, x.memFault(pc, "store", addr, size, err)
				}
				store(p, size, in.k)
			case asm.ClassSTX:
				if in.op.Mode() == asm.ModeAtomic {
					if err := m.execAtomic(x, pc, in); err != nil {
						return 0, err
					}
					break
				}
				size := uint64(in.aux)
				addr := regs[in.dst] + uint64(int64(in.off))
				p, err := m.translate(x, addr, size, true)
				if err != nil {
					return 0, x.memFault(pc, "store", addr, size, err)
				}
				store(p, size, regs[in.src])
			case asm.ClassLD: // LD_IMM64, value resolved by Compile
				regs[in.dst] = in.k
				pc += 2
				continue
			}
		}
		pc++
	}
}
