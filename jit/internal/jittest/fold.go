package jittest

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/jit/internal/analysis"
	"github.com/ncclbpf/ncclbpf/jit/internal/ctest"
	"github.com/ncclbpf/ncclbpf/maps"
	"github.com/ncclbpf/ncclbpf/vm"
)

// NewRodata returns a one-entry .rodata-like array (frozen, read-only for
// programs, as the bundle creates it for libbpf's .rodata) holding value,
// or with frozen false an ordinary writable array with the same contents.
func NewRodata(t testing.TB, value []byte, entries uint32, frozen bool) vm.MapRef {
	t.Helper()
	spec := maps.Spec{Name: ".rodata", Type: maps.Array, KeySize: 4, ValueSize: uint32(len(value)), MaxEntries: entries}
	for i := range entries {
		spec.Contents = append(spec.Contents, maps.KV{Key: binary.LittleEndian.AppendUint32(nil, i), Value: value})
	}
	if frozen {
		spec.Flags, spec.Freeze = maps.FlagRdonlyProg, true
	}
	m, err := maps.New(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	r := m.Ref()
	if r.Frozen != frozen || r.ReadOnly != frozen {
		t.Fatalf("Ref: Frozen %v ReadOnly %v, want %v", r.Frozen, r.ReadOnly, frozen)
	}
	return r
}

// FoldDifferential runs random programs that read a frozen .rodata
// through lddw map_value and loads of every width and mode (with jumps,
// overwrites and pointer reads between) on the interpreter and the JIT.
func FoldDifferential(t *testing.T, compile Compile) {
	const valueSize, entries = 20, 3 // stride 24: padding after each value
	r := rand.New(rand.NewPCG(1, 2))
	value := make([]byte, valueSize)
	for i := range value {
		value[i] = byte(r.Uint32())
	}
	frozen := NewRodata(t, value, entries, true)
	plain := NewRodata(t, value, entries, false)
	interp := vm.NewInterpreter()
	folds := 0
	for seed := uint64(0); seed < 3000; seed++ {
		insns := genFoldProgram(seed, entries*24)
		for _, m := range []vm.MapRef{frozen, plain} {
			p := &vm.Program{Name: "fold", Insns: insns, Helpers: ctest.Table(), Maps: []vm.MapRef{m}}
			xi, err := interp.Compile(p)
			if err != nil {
				t.Fatalf("seed %d: interp: %v\n%s", seed, err, asm.Format(insns))
			}
			xj, err := compile(p)
			if err != nil {
				t.Fatalf("seed %d: jit: %v\n%s", seed, err, asm.Format(insns))
			}
			ri, erri := xi.Run(make([]byte, 64))
			rj, errj := xj.Run(make([]byte, 64))
			xi.Close()
			xj.Close()
			if erri != nil || errj != nil || ri != rj {
				t.Fatalf("seed %d (frozen %v): interp %#x (%v), jit %#x (%v)\n%s", seed, m.Frozen, ri, erri, rj, errj, asm.Format(insns))
			}
			if m.Frozen {
				a, err := analysis.Analyze(p)
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range a.Folded {
					if f {
						folds++
					}
				}
			}
		}
	}
	if folds < 5000 {
		t.Errorf("only %d loads folded: the generator does not exercise folding", folds)
	}
	t.Logf("%d loads folded", folds)
}

// genFoldProgram generates a program reading map 0's values (size bytes
// from ArrayBase) into an accumulator r0.
func genFoldProgram(seed uint64, size int) []asm.Instruction {
	r := rand.New(rand.NewPCG(seed, 0xf01d))
	var out []asm.Instruction
	// ptr[reg] = possible offsets [lo, hi] of a pointer into the values.
	type span struct {
		ok     bool
		lo, hi int
	}
	var ptr [asm.NumRegisters]span
	emit := func(ins ...asm.Instruction) { out = append(out, ins...) }
	reg := func() asm.Register { return asm.Register(2 + r.IntN(8)) } // r2..r9
	sizes := []asm.Size{asm.SizeB, asm.SizeH, asm.SizeW, asm.SizeDW}
	lddw := func(d asm.Register) int {
		off := r.IntN(size)
		emit(asm.Instruction{Op: asm.OpLdImm64, Dst: d, Src: asm.PseudoMapValue}, asm.Instruction{Imm: int32(off)})
		return off
	}
	load := func() bool {
		var cands []asm.Register
		for i, p := range ptr {
			if p.ok {
				cands = append(cands, asm.Register(i))
			}
		}
		if len(cands) == 0 {
			return false
		}
		s := cands[r.IntN(len(cands))]
		sz := sizes[r.IntN(4)]
		nb := sz.Bytes()
		lo, hi := -ptr[s].lo, size-nb-ptr[s].hi // off range keeping every possible access in bounds
		if hi < lo {
			return false
		}
		off := lo + r.IntN(hi-lo+1)
		mode := asm.ModeMEM
		if nb < 8 && r.IntN(2) == 0 {
			mode = asm.ModeMEMSX
		}
		d := reg()
		if r.IntN(3) == 0 {
			d = s // load into the pointer register itself
		}
		emit(asm.Instruction{Op: asm.MemOpCode(asm.ClassLDX, mode, sz), Dst: d, Src: s, Off: int16(off)},
			asm.Instruction{Op: asm.OpCode(uint8(asm.ClassALU64) | uint8(asm.ALUMul) | uint8(asm.SourceK)), Dst: 0, Imm: 31},
			asm.Instruction{Op: asm.OpCode(uint8(asm.ClassALU64) | uint8(asm.ALUXor) | uint8(asm.SourceX)), Dst: 0, Src: d})
		ptr[d] = span{}
		return true
	}
	emit(asm.Instruction{Op: asm.OpCode(uint8(asm.ClassALU64) | uint8(asm.ALUMov) | uint8(asm.SourceK)), Dst: 0, Imm: 0})
	n := 5 + r.IntN(25)
	for range n {
		switch k := r.IntN(10); {
		case k < 3:
			d := reg()
			off := lddw(d)
			ptr[d] = span{true, off, off}
		case k < 7:
			if !load() {
				d := reg()
				off := lddw(d)
				ptr[d] = span{true, off, off}
			}
		case k == 7: // overwrite a register
			d := reg()
			emit(asm.Instruction{Op: asm.OpCode(uint8(asm.ClassALU64) | uint8(asm.ALUMov) | uint8(asm.SourceX)), Dst: d, Src: 1})
			ptr[d] = span{}
		case k == 8: // a branch over an lddw: the register points to one of two places
			d := reg()
			a := ptr[d]
			emit(asm.Instruction{Op: asm.OpCode(uint8(asm.ClassJMP) | uint8(asm.JumpSet) | uint8(asm.SourceK)), Dst: 0, Off: 2, Imm: 1 << r.IntN(8)})
			off := lddw(d)
			if a.ok {
				ptr[d] = span{true, min(a.lo, off), max(a.hi, off)}
			} else {
				ptr[d] = span{}
			}
		default: // read a pointer itself
			d := reg()
			if ptr[d].ok {
				emit(asm.Instruction{Op: asm.OpCode(uint8(asm.ClassALU64) | uint8(asm.ALUAdd) | uint8(asm.SourceX)), Dst: 0, Src: d})
			}
		}
	}
	if r.IntN(2) == 0 {
		load()
	}
	emit(asm.Instruction{Op: asm.OpExit})
	return out
}
