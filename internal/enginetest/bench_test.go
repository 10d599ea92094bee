package enginetest

import (
	"sort"
	"testing"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/jit/native"
	"github.com/ncclbpf/ncclbpf/maps"
	"github.com/ncclbpf/ncclbpf/vm"
)

// Benchmark programs: the operation only, result in r0, as lean as the C
// counterparts in enginetest.c.

const benchEmpty = `
	ldxdw %r0, [%r1+0]
	exit
`

// benchLookup: r0 = value[0] of map(0)[ctx.key], 0 when missing.
const benchLookup = `
	ldxdw %r2, [%r1+0]
	stxdw [%r10-8], %r2
	lddw %r1, map(0)
	mov %r2, %r10
	add %r2, -8
	call 1
	jeq %r0, 0, miss
	ldxdw %r0, [%r0+0]
	exit
miss:
	exit
`

// benchArrayInline is what an array lookup inlined by the JIT would run:
// bounds check and address arithmetic on the array's base address, no
// helper call. The verifier refuses it (map_value(0) addresses value 0
// only), so it is compiled unverified; it is correct for the 1024-entry,
// 16-byte-value array of the benchmark.
const benchArrayInline = `
	ldxw %r2, [%r1+0]
	jge %r2, 1024, miss
	lsh %r2, 4
	lddw %r0, map_value(0)+0
	add %r0, %r2
	ldxdw %r0, [%r0+0]
	exit
miss:
	mov %r0, 0
	exit
`

// benchUpdate: r0 = bpf_map_update_elem(map(0), &ctx.key, &{ctx.val,
// ctx.key}, ctx.flags); progUpdate without saving r1.
const benchUpdate = progUpdate

const benchEntries = 1024

// benchCase is one operation, as a program and as plain C.
type benchCase struct {
	name     string
	src      string
	verified bool
	mapType  maps.Type // 0: no map
	c        COp
}

var benchCases = []benchCase{
	{"empty", benchEmpty, true, 0, CEmpty},
	{"array-lookup", benchLookup, true, maps.Array, CArrayLookup},
	{"array-lookup-inline", benchArrayInline, false, maps.Array, CArrayLookup},
	{"array-update", benchUpdate, true, maps.Array, CArrayUpdate},
	{"hash-lookup", benchLookup, true, maps.Hash, CHashLookup},
	{"hash-update", benchUpdate, true, maps.Hash, CHashUpdate},
	// The other map types, next to the nearest plain C structure.
	{"lru-lookup", benchLookup, true, maps.LRUHash, CHashLookup},
	{"lru-update", benchUpdate, true, maps.LRUHash, CHashUpdate},
	{"percpu-lookup", benchLookup, true, maps.PerCPUArray, CArrayLookup},
}

// benchMap makes the benchmark map of type typ: 1024 entries, 16-byte
// values {key, 0} (in every slot of a per-CPU array); a hash map gets keys
// 0..1023 (every lookup hits, every update replaces), like the C table.
func benchMap(tb testing.TB, typ maps.Type) *maps.Map {
	s := maps.Spec{Name: "bench", Type: typ, KeySize: 8, ValueSize: 16, MaxEntries: benchEntries}
	if typ == maps.Array || typ == maps.PerCPUArray {
		s.KeySize = 4
	}
	m := newMap(tb, s)
	if typ == maps.Hash || typ == maps.LRUHash {
		for k := uint64(0); k < benchEntries; k++ {
			if err := m.Update(u64(k), val16(k, 0), maps.UpdateNoExist); err != nil {
				tb.Fatal(err)
			}
		}
	} else {
		for k := uint32(0); k < benchEntries; k++ {
			if err := m.Update(u32(k), val16(uint64(k), 0), maps.UpdateAny); err != nil {
				tb.Fatal(err)
			}
		}
	}
	return m
}

// benchEntry compiles bc with the JIT on a fresh map and returns the entry
// point and the map (nil for "empty").
func benchEntry(tb testing.TB, bc benchCase) (uintptr, *maps.Map) {
	tb.Helper()
	var ms []*maps.Map
	var m *maps.Map
	if bc.mapType != 0 {
		m = benchMap(tb, bc.mapType)
		ms = append(ms, m)
	}
	var x vm.Executable
	if bc.verified {
		x = program(tb, native.New(), bc.src, ms...)
	} else {
		insns, err := asm.Assemble(bc.src)
		if err != nil {
			tb.Fatal(err)
		}
		x, err = native.New().Compile(&vm.Program{Name: bc.name, Insns: insns, Maps: []vm.MapRef{m.Ref()}, Helpers: maps.HelperTable()})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { x.Close() })
	}
	return x.(vm.NativeExecutable).Entry(), m
}

// BenchmarkMapOps compares map operations run by JIT code (impl=jit: a C
// loop calls the compiled program's entry point b.N times within one cgo
// call, the program calls the map helper) with the same operation in plain
// C (impl=c: the same loop calls a C function through a pointer, on a
// plain C array or chained hash table). Keys cycle through 0..1023; all
// are present. One run gives both, so ratios are from one run:
//
//	go test ./maps/enginetest/ -run '^$' -bench MapOps -count 5 | benchstat -col /impl -
func BenchmarkMapOps(b *testing.B) {
	if err := SetupC(benchEntries); err != nil {
		b.Fatal(err)
	}
	for _, bc := range benchCases {
		entry, _ := benchEntry(b, bc)
		for _, impl := range []struct {
			name string
			fn   uintptr
		}{{"c", bc.c.Addr()}, {"jit", entry}} {
			b.Run("op="+bc.name+"/impl="+impl.name, func(b *testing.B) {
				Loop(impl.fn, 1000, benchEntries-1, 0) // warm caches
				b.ResetTimer()
				Loop(impl.fn, uint64(b.N), benchEntries-1, 0)
			})
		}
	}
}

// TestBenchPrograms checks that each benchmark program and its C
// counterpart compute the same thing: the same sum of results over the
// same calls and, for updates, the same final contents.
func TestBenchPrograms(t *testing.T) {
	const n = 3 * benchEntries
	for _, bc := range benchCases {
		t.Run(bc.name, func(t *testing.T) {
			if err := SetupC(benchEntries); err != nil {
				t.Fatal(err)
			}
			entry, m := benchEntry(t, bc)
			jit, c := Loop(entry, n, benchEntries-1, 0), Loop(bc.c.Addr(), n, benchEntries-1, 0)
			if jit != c {
				t.Fatalf("sum of results: jit %d, C %d", jit, c)
			}
			if bc.name == "array-lookup" && jit != 3*benchEntries*(benchEntries-1)/2 {
				t.Fatalf("array lookup sum %d: not every key hit", jit)
			}
			if bc.mapType == maps.Hash || bc.mapType == maps.LRUHash {
				for k := uint64(0); k < benchEntries; k++ {
					a, _, ok := lookup16(t, m, u64(k))
					cv, cok := CHashGet(k)
					if !ok || !cok || a != cv {
						t.Fatalf("key %d: map %d (%v), C table %d (%v)", k, a, ok, cv, cok)
					}
				}
			}
			// Error paths agree too: flags 1 (NOEXIST) on present keys and
			// flags 5.
			if bc.c == CArrayUpdate || bc.c == CHashUpdate {
				for _, f := range []uint64{fNoExist, 5} {
					jit, c := Loop(entry, 8, benchEntries-1, f), Loop(bc.c.Addr(), 8, benchEntries-1, f)
					if jit != c || jit == 0 {
						t.Errorf("flags %d: sum of results: jit %s, C %s", f, errName(jit), errName(c))
					}
				}
			}
		})
	}
}

// BenchmarkMapOpsPaired measures the ratio of each operation from JIT
// code to plain C on a loaded machine: chunks of 65536 calls alternate
// between C and the JIT, each timed with the thread's CPU time, and the
// medians per chunk are reported as c-ns/op and jit-ns/op with their ratio
// jit/c. b.N is the number of calls of each; the benchmark's own ns/op is
// the wall time of one C call plus one JIT call.
//
//	go test ./maps/enginetest/ -run '^$' -bench MapOpsPaired -benchtime 20000000x -count 5
func BenchmarkMapOpsPaired(b *testing.B) {
	if err := SetupC(benchEntries); err != nil {
		b.Fatal(err)
	}
	for _, bc := range benchCases {
		entry, _ := benchEntry(b, bc)
		b.Run("op="+bc.name, func(b *testing.B) {
			const chunk = 1 << 16
			fns := [2]uintptr{bc.c.Addr(), entry}
			var per [2][]float64
			for left := b.N; left > 0; left -= chunk {
				k := min(left, chunk)
				for i, fn := range fns {
					_, cpu := TimedLoop(fn, uint64(k), benchEntries-1, 0)
					per[i] = append(per[i], float64(cpu.Nanoseconds())/float64(k))
				}
			}
			c, jit := median(per[0]), median(per[1])
			b.ReportMetric(c, "c-ns/op")
			b.ReportMetric(jit, "jit-ns/op")
			b.ReportMetric(jit/c, "jit/c")
		})
	}
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
