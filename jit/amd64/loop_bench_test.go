package amd64

import (
	"bytes"
	"encoding/binary"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/jit/internal/loopbench"
	"github.com/ncclbpf/ncclbpf/vm"
)

// ubpfLib is uBPF built as a shared library (-fPIC -shared); when set,
// BenchmarkNativeLoop and TestNativeLoopAgrees also run uBPF's JIT.
var ubpfLib = flag.String("ubpf", "", "path of libubpf.so: also run uBPF's JIT on the loop programs")

// nativeDirs names loop programs compiled elsewhere (for a machine without
// that compiler): LABEL=DIR, comma-separated; DIR/NAME.so runs as
// native-LABEL beside the compilers found here.
var nativeDirs = flag.String("native", "", "LABEL=DIR[,...]: also run DIR/NAME.so, the loop programs compiled elsewhere, as native-LABEL")

// loopPrograms are the loop programs of testdata/loop: NAME.s in eBPF
// assembly and NAME.c, the same computation in C, whose function
// ncclbpf_loop_NAME has the entry point's signature. Their context is
// loopCtx's.
var loopPrograms = []string{"compute", "xorshift"}

// loopCtx returns a loop program's context: an 8-byte state (xorshift
// reads and writes it, compute ignores it).
func loopCtx() []byte {
	ctx := make([]byte, 8)
	binary.LittleEndian.PutUint64(ctx, 0x12345)
	return ctx
}

// loopEngine is one engine's entry point for a loop program.
type loopEngine struct {
	name string
	fn   uintptr
}

// loopEngines builds the loop program name natively with every C compiler
// found (-O2), compiles its eBPF version with this JIT and, with -ubpf,
// with uBPF's; everything is released when tb ends.
func loopEngines(tb testing.TB, name string) []loopEngine {
	tb.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", "loop", name+".s"))
	if err != nil {
		tb.Fatal(err)
	}
	insns, err := asm.Assemble(string(src))
	if err != nil {
		tb.Fatalf("%s.s: %v", name, err)
	}
	var out []loopEngine
	ccs := loopbench.Compilers()
	prebuilt := map[string]string{} // label -> shared object
	if *nativeDirs != "" {
		for _, d := range strings.Split(*nativeDirs, ",") {
			label, dir, ok := strings.Cut(d, "=")
			if !ok || label == "" || dir == "" {
				tb.Fatalf("-native %q: want LABEL=DIR", d)
			}
			prebuilt[label] = filepath.Join(dir, name+".so")
		}
	}
	if len(ccs) == 0 && len(prebuilt) == 0 {
		tb.Skip("no C compiler (clang-19, clang, gcc) in PATH for the native baseline, and no -native")
	}
	dir := tb.TempDir()
	sos := map[string]string{}
	for _, cc := range ccs {
		so, err := loopbench.Build(cc, filepath.Join("testdata", "loop", name+".c"), dir)
		if err != nil {
			tb.Fatal(err)
		}
		sos[cc] = so
	}
	for label, so := range prebuilt {
		if _, ok := sos[label]; !ok {
			sos[label] = so
		}
	}
	for _, cc := range slices.Sorted(maps.Keys(sos)) {
		so := sos[cc]
		lib, err := loopbench.Open(so)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { lib.Close() })
		fn, err := lib.Func("ncclbpf_loop_" + name)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, loopEngine{"native-" + cc, fn})
	}
	x, err := Compile(&vm.Program{Name: name, Insns: insns})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { x.Close() })
	out = append(out, loopEngine{"jit", x.Entry()})
	if *ubpfLib != "" {
		u, err := loopbench.OpenUBPF(*ubpfLib, asm.Encode(insns))
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { u.Close() })
		out = append(out, loopEngine{"ubpf", u.Entry})
	}
	return out
}

// TestNativeLoopAgrees: the C version of each loop program computes what
// the interpreter computes from its eBPF version, and so do this JIT (and
// uBPF with -ubpf), called from the benchmark's C loop.
func TestNativeLoopAgrees(t *testing.T) {
	for _, name := range loopPrograms {
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join("testdata", "loop", name+".s"))
			if err != nil {
				t.Fatal(err)
			}
			insns, err := asm.Assemble(string(src))
			if err != nil {
				t.Fatal(err)
			}
			xi, err := vm.NewInterpreter().Compile(&vm.Program{Name: name, Insns: insns})
			if err != nil {
				t.Fatal(err)
			}
			defer xi.Close()
			wantCtx := loopCtx()
			var want uint64
			for range 3 {
				r, err := xi.Run(wantCtx)
				if err != nil {
					t.Fatal(err)
				}
				want += r
			}
			for _, e := range loopEngines(t, name) {
				ctx := loopCtx()
				if got := loopbench.Loop(e.fn, ctx, 3); got != want || !bytes.Equal(ctx, wantCtx) {
					t.Errorf("%s: 3 runs sum to %#x and leave state %x, the interpreter's %#x and %x", e.name, got, ctx, want, wantCtx)
				}
			}
		})
	}
}

// loopBatch is how many runs of one engine BenchmarkNativeLoop times at a
// time.
const loopBatch = 100

// BenchmarkNativeLoop runs each loop program from one C loop on every
// engine: natively (each C compiler found, -O2), this JIT, and uBPF's JIT
// with -ubpf. Each iteration times a batch of loopBatch runs on every
// engine in turn, so that a machine's load changes the engines alike; it
// reports the median ns per run of each engine (ns/ENGINE) and the ratio
// of the JITs' to each native build's (ENGINE/CC, lower is better).
func BenchmarkNativeLoop(b *testing.B) {
	for _, name := range loopPrograms {
		b.Run(name, func(b *testing.B) {
			engines := loopEngines(b, name)
			times := make([][]float64, len(engines))
			ctxs := make([][]byte, len(engines))
			for i, e := range engines {
				ctxs[i] = loopCtx()
				loopbench.Loop(e.fn, ctxs[i], loopBatch) // warm up
			}
			b.ResetTimer()
			for b.Loop() {
				for i, e := range engines {
					t0 := time.Now()
					loopbench.Loop(e.fn, ctxs[i], loopBatch)
					times[i] = append(times[i], float64(time.Since(t0).Nanoseconds())/loopBatch)
				}
			}
			b.ReportMetric(0, "ns/op") // an iteration runs every engine
			med := make(map[string]float64)
			for i, e := range engines {
				slices.Sort(times[i])
				med[e.name] = times[i][len(times[i])/2]
				b.ReportMetric(med[e.name], "ns/"+e.name)
			}
			for _, e := range engines {
				if strings.HasPrefix(e.name, "native-") {
					continue
				}
				for _, n := range engines {
					if cc, ok := strings.CutPrefix(n.name, "native-"); ok {
						b.ReportMetric(med[e.name]/med[n.name], e.name+"/"+cc)
					}
				}
			}
		})
	}
}
