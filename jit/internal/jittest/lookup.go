package jittest

import (
	"testing"
	"unsafe"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/helpers"
	"github.com/ncclbpf/ncclbpf/jit/internal/ctest"
	"github.com/ncclbpf/ncclbpf/vm"
)

// ArrayLookups checks bpf_map_lookup_elem of an array map emitted inline
// (analysis.InlineLookup): keys in range give the value's address, keys at
// or past MaxEntries 0, a key is the low 32 bits its pointer points to;
// and where r1 is not surely the map (a jump lands between its load and
// the call, another map type, a helper without the array semantics) the
// helper is called. The table's helper 1 is ctest's logging helper marked
// ArrayLookup: a call shows in the log, an inline lookup does not.
func ArrayLookups(t *testing.T, compile Compile) {
	vals := make([]uint64, 5*3) // 5 values of 24 bytes (stride 24: not a power of two)
	vals4 := make([]uint64, 4*2)
	maps := []vm.MapRef{
		{Name: "arr24", Handle: 0x1111, Type: 2, KeySize: 4, ValueSize: 20, MaxEntries: 5, ArrayBase: uintptr(unsafe.Pointer(&vals[0])), ArrayStride: 24},
		{Name: "arr16", Handle: 0x2222, Type: 2, KeySize: 4, ValueSize: 16, MaxEntries: 4, ArrayBase: uintptr(unsafe.Pointer(&vals4[0])), ArrayStride: 16},
		{Name: "hash", Handle: 0x3333, Type: 1, KeySize: 4, ValueSize: 8, MaxEntries: 4},
		{Name: "pcpu", Handle: 0x4444, Type: 6, KeySize: 4, ValueSize: 8, MaxEntries: 4},
	}
	base24, base16 := uint64(maps[0].ArrayBase), uint64(maps[1].ArrayBase)
	lookup := func(key, m string) string {
		return "stw [%r10-4], " + key + "\nmov %r2, %r10\nadd %r2, -4\nlddw %r1, map(" + m + ")\ncall 1\n"
	}
	for _, tc := range []struct {
		name   string
		src    string
		want   uint64
		called bool
	}{
		{"key 0", lookup("0", "0") + "exit", base24, false},
		{"last key", lookup("4", "0") + "exit", base24 + 4*24, false},
		{"key = max_entries", lookup("5", "0") + "exit", 0, false},
		{"key -1", lookup("-1", "0") + "exit", 0, false},
		{"power-of-two stride", lookup("3", "1") + "exit", base16 + 3*16, false},
		{"low 32 bits of the key word", "lddw %r3, 0x700000002\nstxdw [%r10-8], %r3\nmov %r2, %r10\nadd %r2, -8\nlddw %r1, map(0)\ncall 1\nexit", base24 + 2*24, false},
		{"value read through the result", lookup("2", "0") + "mov %r6, %r0\nmov %r0, 0\njeq %r6, 0, +1\nldxdw %r0, [%r6+8]\nexit", 0x77, false},
		{"r1 set before a jump target", "lddw %r1, map(0)\nstw [%r10-4], 1\nmov %r2, %r10\nadd %r2, -4\nja +0\ncall 1\nexit", 0, true},
		{"a jump lands between the load and the call", "lddw %r1, map(0)\nja +0\nstw [%r10-4], 1\nmov %r2, %r10\nadd %r2, -4\ncall 1\nexit", 0, true},
		{"r1 moved from another register", "lddw %r3, map(0)\nstw [%r10-4], 1\nmov %r2, %r10\nadd %r2, -4\nmov %r1, %r3\ncall 1\nexit", 0, true},
		{"hash map", lookup("1", "2") + "exit", 0, true},
		{"per-CPU array", lookup("1", "3") + "exit", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vals[2*3+1] = 0x77
			insns, err := asm.Assemble(tc.src)
			if err != nil {
				t.Fatal(err)
			}
			table := ctest.Table()
			h := table[helpers.MapLookupElem]
			h.ArrayLookup = true
			table[helpers.MapLookupElem] = h
			x, err := compile(&vm.Program{Name: tc.name, Insns: insns, Helpers: table, Maps: maps})
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			defer x.Close()
			ctest.Reset()
			got, err := x.Run(nil)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			_, n := ctest.Log()
			if tc.called {
				if n != 1 {
					t.Fatalf("the helper ran %d times, want once (not inlined)", n)
				}
				return
			}
			if n != 0 || got != tc.want {
				t.Fatalf("Run = %#x with %d helper calls; want %#x inline", got, n, tc.want)
			}
		})
	}
	// Without ArrayLookup (a table of other helpers) the call stays a call.
	insns, _ := asm.Assemble(lookup("1", "0") + "exit")
	x, err := compile(&vm.Program{Name: "plain table", Insns: insns, Helpers: ctest.Table(), Maps: maps})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	ctest.Reset()
	if _, err := x.Run(nil); err != nil {
		t.Fatal(err)
	}
	if _, n := ctest.Log(); n != 1 {
		t.Errorf("a helper 1 without ArrayLookup ran %d times, want 1", n)
	}
}
