package vm_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"sync"
	"testing"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/helpers"
	"github.com/ncclbpf/ncclbpf/maps"
	"github.com/ncclbpf/ncclbpf/vm"
)

// The interpreter with the real native maps and helpers of package maps.

func newMap(t *testing.T, s maps.Spec) *maps.Map {
	t.Helper()
	m, err := maps.New(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

type mapsFixture struct {
	hash, array, ring *maps.Map
	refs              []vm.MapRef
}

func newMapsFixture(t *testing.T) *mapsFixture {
	f := &mapsFixture{
		hash:  newMap(t, maps.Spec{Name: "hash", Type: maps.Hash, KeySize: 4, ValueSize: 16, MaxEntries: 8}),
		array: newMap(t, maps.Spec{Name: "array", Type: maps.Array, KeySize: 4, ValueSize: 12, MaxEntries: 4}),
		ring:  newMap(t, maps.Spec{Name: "ring", Type: maps.RingBuf, MaxEntries: 4096}),
	}
	f.refs = []vm.MapRef{f.hash.Ref(), f.array.Ref(), f.ring.Ref()}
	return f
}

func (f *mapsFixture) compile(t *testing.T, insns ...[]asm.Instruction) vm.Executable {
	t.Helper()
	var all []asm.Instruction
	for _, p := range insns {
		all = append(all, p...)
	}
	x, err := vm.NewInterpreter().Compile(&vm.Program{Name: t.Name(), Insns: all, Maps: f.refs, Helpers: maps.HelperTable()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

// I is a tiny assembler for this file.
func I(op asm.OpCode, dst, src asm.Register, off int16, imm int32) []asm.Instruction {
	return []asm.Instruction{{Op: op, Dst: dst, Src: src, Off: off, Imm: imm}}
}

var (
	movK   = asm.ALUOpCode(asm.ClassALU64, asm.ALUMov, asm.SourceK)
	movX   = asm.ALUOpCode(asm.ClassALU64, asm.ALUMov, asm.SourceX)
	addK   = asm.ALUOpCode(asm.ClassALU64, asm.ALUAdd, asm.SourceK)
	stW    = asm.MemOpCode(asm.ClassST, asm.ModeMEM, asm.SizeW)
	stDW   = asm.MemOpCode(asm.ClassST, asm.ModeMEM, asm.SizeDW)
	ldxDW  = asm.MemOpCode(asm.ClassLDX, asm.ModeMEM, asm.SizeDW)
	ldxW   = asm.MemOpCode(asm.ClassLDX, asm.ModeMEM, asm.SizeW)
	xaddDW = asm.MemOpCode(asm.ClassSTX, asm.ModeAtomic, asm.SizeDW)
	jeqK   = asm.JumpOpCode(asm.ClassJMP, asm.JumpEq, asm.SourceK)
	exitI  = I(asm.OpExit, 0, 0, 0, 0)
)

func ldMap(dst asm.Register, src asm.Register, idx, off int32) []asm.Instruction {
	return []asm.Instruction{{Op: asm.OpLdImm64, Dst: dst, Src: src, Imm: idx}, {Imm: off}}
}

func callH(id helpers.ID) []asm.Instruction { return I(asm.OpCall, 0, 0, 0, int32(id)) }

// lookupKey: r0 = bpf_map_lookup_elem(map idx, &key) with the key at r10-4.
func lookupKey(idx int32, key int32) []asm.Instruction {
	var p []asm.Instruction
	p = append(p, I(stW, asm.R10, 0, -4, key)...)
	p = append(p, ldMap(asm.R1, asm.PseudoMapFD, idx, 0)...)
	p = append(p, I(movX, asm.R2, asm.R10, 0, 0)...)
	p = append(p, I(addK, asm.R2, 0, 0, -4)...)
	return append(p, callH(helpers.MapLookupElem)...)
}

func TestInterpWithMaps(t *testing.T) {
	f := newMapsFixture(t)

	t.Run("update then lookup", func(t *testing.T) {
		// value = {7, 9} at r10-24; update(hash, &key 3, &value, 0); lookup; r0 = value[1].
		x := f.compile(t,
			I(stW, asm.R10, 0, -4, 3), I(stDW, asm.R10, 0, -24, 7), I(stDW, asm.R10, 0, -16, 9),
			ldMap(asm.R1, asm.PseudoMapFD, 0, 0), I(movX, asm.R2, asm.R10, 0, 0), I(addK, asm.R2, 0, 0, -4),
			I(movX, asm.R3, asm.R10, 0, 0), I(addK, asm.R3, 0, 0, -24), I(movK, asm.R4, 0, 0, 0),
			callH(helpers.MapUpdateElem),
			lookupKey(0, 3), I(jeqK, asm.R0, 0, 2, 0), I(ldxDW, asm.R0, asm.R0, 8, 0), exitI,
			I(movK, asm.R0, 0, 0, -1), exitI)
		if got, err := x.Run(nil); err != nil || got != 9 {
			t.Fatalf("Run = %d, %v; want 9", got, err)
		}
		v, err := f.hash.Lookup(binary.LittleEndian.AppendUint32(nil, 3))
		if err != nil || binary.LittleEndian.Uint64(v) != 7 {
			t.Fatalf("hash[3] = %x, %v", v, err)
		}
	})

	t.Run("value bounds are value_size", func(t *testing.T) {
		x := f.compile(t, lookupKey(1, 0), I(ldxW, asm.R0, asm.R0, 8, 0), exitI)
		if _, err := x.Run(nil); err != nil {
			t.Fatalf("last 4 bytes of a 12-byte value: %v", err)
		}
		x = f.compile(t, lookupKey(1, 0), I(ldxDW, asm.R0, asm.R0, 8, 0), exitI)
		if _, err := x.Run(nil); !errors.Is(err, vm.ErrMemory) {
			t.Fatalf("8 bytes at offset 8 of a 12-byte value: %v, want ErrMemory", err)
		}
	})

	t.Run("missing key is null", func(t *testing.T) {
		x := f.compile(t, lookupKey(0, 42), I(ldxDW, asm.R0, asm.R0, 0, 0), exitI)
		if _, err := x.Run(nil); !errors.Is(err, vm.ErrMemory) {
			t.Fatalf("load through null: %v, want ErrMemory", err)
		}
	})

	t.Run("atomic add through lookup from many goroutines", func(t *testing.T) {
		x := f.compile(t, lookupKey(1, 2), I(jeqK, asm.R0, 0, 2, 0),
			I(movK, asm.R1, 0, 0, 1), I(xaddDW, asm.R0, asm.R1, 0, asm.AtomicAdd), exitI)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for range 500 {
					if _, err := x.Run(nil); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		v, _ := f.array.Lookup(binary.LittleEndian.AppendUint32(nil, 2))
		if got := binary.LittleEndian.Uint64(v); got != 8*500 {
			t.Fatalf("array[2] = %d, want %d", got, 8*500)
		}
	})

	t.Run("direct value address", func(t *testing.T) {
		// &array[1] + 4 = ArrayBase + stride + 4.
		stride := int32(f.refs[1].ArrayStride)
		x := f.compile(t, ldMap(asm.R1, asm.PseudoMapValue, 1, stride+4), I(stW, asm.R1, 0, 0, 0x55), I(movK, asm.R0, 0, 0, 0), exitI)
		if _, err := x.Run(nil); err != nil {
			t.Fatal(err)
		}
		v, _ := f.array.Lookup(binary.LittleEndian.AppendUint32(nil, 1))
		if !bytes.Equal(v[4:8], []byte{0x55, 0, 0, 0}) {
			t.Fatalf("array[1] = % x", v)
		}
	})

	t.Run("ring buffer reserve submit", func(t *testing.T) {
		reserve := [][]asm.Instruction{ldMap(asm.R1, asm.PseudoMapFD, 2, 0), I(movK, asm.R2, 0, 0, 16), I(movK, asm.R3, 0, 0, 0),
			callH(helpers.RingbufReserve), I(jeqK, asm.R0, 0, 1, 0), I(asm.OpJa, 0, 0, 2, 0), I(movK, asm.R0, 0, 0, -1), exitI,
			I(stDW, asm.R0, 0, 8, 0x1234), I(movX, asm.R6, asm.R0, 0, 0), I(movX, asm.R1, asm.R0, 0, 0), I(movK, asm.R2, 0, 0, 0),
			callH(helpers.RingbufSubmit)}
		x := f.compile(t, append(reserve, I(movK, asm.R0, 0, 0, 0), exitI)...)
		if got, err := x.Run(nil); err != nil || got != 0 {
			t.Fatalf("Run = %d, %v", got, err)
		}
		var rec []byte
		if _, err := f.ring.ReadRing(func(r []byte) bool { rec = append([]byte(nil), r...); return true }); err != nil {
			t.Fatal(err)
		}
		if len(rec) != 16 || binary.LittleEndian.Uint64(rec[8:]) != 0x1234 {
			t.Fatalf("record = % x", rec)
		}
		x = f.compile(t, append(reserve, I(stDW, asm.R6, 0, 0, 1), I(movK, asm.R0, 0, 0, 0), exitI)...)
		if _, err := x.Run(nil); !errors.Is(err, vm.ErrMemory) {
			t.Fatalf("store after submit: %v, want ErrMemory", err)
		}
	})
}
