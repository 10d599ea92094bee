package jittest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/internal/envconfig"
	"github.com/ncclbpf/ncclbpf/jit/internal/ctest"
	"github.com/ncclbpf/ncclbpf/jit/internal/executable"
	"github.com/ncclbpf/ncclbpf/vm"
)

// Differential testing: random programs (gen.go) run on the reference
// interpreter and on the JIT must agree on r0, the error (both or neither,
// of the same kind), the final mem buffer, the array map's values and the
// sequence of helper calls.
//
// Normal runs check diffSeedPrograms programs. NCCLBPF_DIFF_N=1000000 runs
// that many (seeds 0..N-1, or from NCCLBPF_DIFF_SEED); progress is logged.

const diffSeedPrograms = 3000

type runResult struct {
	r0    uint64
	err   error
	mem   []byte
	arr   []byte // the array map's values after the run
	calls []ctest.Call
	n     int
}

func runOn(x vm.Executable, mem []byte) runResult {
	m := bytes.Clone(mem)
	genArrayReset(mem)
	ctest.Reset()
	r0, err := x.Run(m)
	calls, n := ctest.Log()
	return runResult{r0: r0, err: err, mem: m, arr: genArrayBytes(), calls: calls, n: n}
}

// SameFault reports whether the interpreter's and the JIT's errors mean the
// same thing.
func SameFault(ei, ej error) bool {
	switch {
	case ei == nil || ej == nil:
		return ei == nil && ej == nil
	case errors.Is(ei, vm.ErrUnknownHelper):
		return errors.Is(ej, executable.ErrUnknownHelper)
	case errors.Is(ei, vm.ErrCallDepth):
		return errors.Is(ej, executable.ErrCallDepth)
	}
	return false
}

// CompileSeed compiles generated program seed with the backend under test
// (a backend may choose a lowering by seed).
type CompileSeed func(p *vm.Program, seed uint64) (vm.Executable, error)

// DiffOne generates program seed, runs it on the interpreter and on the
// JIT and describes the first disagreement ("" if none).
func DiffOne(interp vm.Engine, compile CompileSeed, seed uint64, size int) string {
	p, mem := GenProgram(seed, size)
	xi, erri := interp.Compile(p)
	xj, errj := compile(p, seed)
	if erri != nil || errj != nil {
		if xi != nil {
			xi.Close()
		}
		if xj != nil {
			xj.Close()
		}
		return fmt.Sprintf("compile: interp %v, jit %v", erri, errj)
	}
	defer xi.Close()
	defer xj.Close()
	ri := runOn(xi, mem)
	rj := runOn(xj, mem)
	switch {
	case !SameFault(ri.err, rj.err):
		return fmt.Sprintf("errors differ: interp %v, jit %v", ri.err, rj.err)
	case ri.err == nil && ri.r0 != rj.r0:
		return fmt.Sprintf("r0: interp %#x, jit %#x", ri.r0, rj.r0)
	case !bytes.Equal(ri.mem, rj.mem):
		i := 0
		for ri.mem[i] == rj.mem[i] {
			i++
		}
		return fmt.Sprintf("mem differs from byte %d: interp % x, jit % x", i, ri.mem[i:min(i+8, len(ri.mem))], rj.mem[i:min(i+8, len(rj.mem))])
	case !bytes.Equal(ri.arr, rj.arr):
		return fmt.Sprintf("array map values differ: interp % x, jit % x", ri.arr, rj.arr)
	case ri.n != rj.n:
		return fmt.Sprintf("helper calls: interp %d, jit %d", ri.n, rj.n)
	}
	for k := range ri.calls {
		if ri.calls[k] != rj.calls[k] {
			return fmt.Sprintf("helper call %d: interp %+v, jit %+v", k, ri.calls[k], rj.calls[k])
		}
	}
	return ""
}

// Differential runs diffSeedPrograms generated programs (or
// NCCLBPF_DIFF_N, from seed NCCLBPF_DIFF_SEED) on the interpreter and the
// JIT and fails on the first five disagreements.
func Differential(t *testing.T, compile CompileSeed) {
	n, first := uint64(diffSeedPrograms), uint64(0)
	if s := os.Getenv(envconfig.DiffN); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("NCCLBPF_DIFF_N=%q: %v", s, err)
		}
		n = v
	}
	if s := os.Getenv(envconfig.DiffSeed); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("NCCLBPF_DIFF_SEED=%q: %v", s, err)
		}
		first = v
	}
	interp := vm.NewInterpreter()
	start := time.Now()
	var insns int
	mismatches := 0
	for seed := first; seed < first+n; seed++ {
		size := 10 + int(seed%90)
		if msg := DiffOne(interp, compile, seed, size); msg != "" {
			mismatches++
			p, _ := GenProgram(seed, size)
			t.Errorf("seed %d (size %d): %s\nprogram:\n%s", seed, size, msg, asm.Format(p.Insns))
			if mismatches >= 5 {
				t.Fatalf("stopping after %d mismatches", mismatches)
			}
		}
		if seed%100 == 0 || n > diffSeedPrograms {
			p, _ := GenProgram(seed, size)
			insns += len(p.Insns)
		}
		if n > diffSeedPrograms && (seed-first+1)%100000 == 0 {
			t.Logf("%d programs, %d mismatches, %v", seed-first+1, mismatches, time.Since(start).Round(time.Second))
		}
	}

	t.Logf("%d programs (seeds %d..%d), %d mismatches, %v", n, first, first+n-1, mismatches, time.Since(start).Round(time.Millisecond))
}
