package verifier_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/hook"
	"github.com/ncclbpf/ncclbpf/loader"
	"github.com/ncclbpf/ncclbpf/maps"
	"github.com/ncclbpf/ncclbpf/verifier"
	"github.com/ncclbpf/ncclbpf/vm"
)

// The soundness oracle: every program the verifier accepts runs in the
// reference interpreter, which traps any access outside the memory it
// knows (stack frames, map values returned by helpers, the context
// restricted to the hook's declared fields with their access rights) and
// must never trap. r0 must also be in the hook's return range.

// ctxLayout turns a hook context into the interpreter's memory layout.
func ctxLayout(c *hook.Context) []vm.MemRange {
	var out []vm.MemRange
	for _, f := range c.Fields {
		n := max(f.Array, 1)
		for i := 0; i < n; i++ {
			out = append(out, vm.MemRange{Offset: f.Offset + i*f.Size, Size: f.Size,
				Readable: f.Access&hook.Read != 0, Writable: f.Access&hook.Write != 0})
		}
	}
	return out
}

// liveMaps creates native maps for specs; close them with the returned
// function.
func liveMaps(t testing.TB, specs []maps.Spec) ([]vm.MapRef, func()) {
	var refs []vm.MapRef
	var live []*maps.Map
	for _, s := range specs {
		m, err := maps.New(s)
		if err != nil {
			t.Fatalf("map %s: %v", s.Name, err)
		}
		live = append(live, m)
		refs = append(refs, m.Ref())
	}
	return refs, func() {
		for _, m := range live {
			m.Close()
		}
	}
}

func asmMapSpecs() []maps.Spec {
	var out []maps.Spec
	for _, m := range asmMaps {
		s := maps.Spec{Name: m.Name, Type: m.Type, KeySize: m.KeySize, ValueSize: m.ValueSize, MaxEntries: m.MaxEntries}
		if m.Freeze {
			s.Flags = maps.FlagRdonlyProg
		}
		out = append(out, s)
	}
	return out
}

func loaderMapSpecs(c *loader.CollectionSpec) []maps.Spec {
	var out []maps.Spec
	for _, m := range c.Maps {
		out = append(out, *m.Copy())
	}
	return out
}

// runner executes one verified program on random contexts.
type runner struct {
	h    *hook.Hook
	exec vm.Executable
}

func newRunner(t testing.TB, h *hook.Hook, name string, insns []asm.Instruction, refs []vm.MapRef) *runner {
	eng := vm.NewInterpreter(vm.WithMemLayout(ctxLayout(&h.Context)...), vm.WithBudget(10_000_000))
	x, err := eng.Compile(&vm.Program{Name: name, Insns: insns, Maps: refs, Helpers: maps.HelperTable()})
	if err != nil {
		t.Fatalf("%s: interpreter refuses a verified program: %v", name, err)
	}
	return &runner{h: h, exec: x}
}

// run returns a non-nil error when the program trapped or returned a value
// outside the hook's range.
func (r *runner) run(rng *rand.Rand) error {
	ctx := make([]byte, r.h.Context.Size)
	for i := range ctx {
		switch rng.IntN(4) {
		case 0:
			ctx[i] = 0
		case 1:
			ctx[i] = 0xff
		default:
			ctx[i] = byte(rng.Uint32())
		}
	}
	r0, err := r.exec.Run(ctx)
	if err != nil {
		return fmt.Errorf("trapped on ctx %x: %w", ctx, err)
	}
	v := int64(r0)
	if r.h.Return.Min >= -1<<31 && r.h.Return.Max < 1<<31 {
		v = int64(int32(uint32(r0)))
	}
	if v < r.h.Return.Min || v > r.h.Return.Max {
		return fmt.Errorf("returned %d outside [%d, %d] on ctx %x", v, r.h.Return.Min, r.h.Return.Max, ctx)
	}
	return nil
}

// TestSoundnessCorpus runs every accepted corpus program on random
// contexts.
func TestSoundnessCorpus(t *testing.T) {
	maps.CapturePrintk(true)
	defer maps.CapturePrintk(false)
	rng := rand.New(rand.NewPCG(1, 2))
	ran := 0
	objs, _ := filepath.Glob("../testdata/verifier/*.o")
	for _, obj := range objs {
		coll, err := loader.LoadFile(obj)
		if err != nil {
			t.Fatal(err)
		}
		refs, done := liveMaps(t, loaderMapSpecs(coll))
		for _, p := range coll.Programs {
			cfg := configFor(t, coll, p)
			if _, err := cfg.Verify(p.Insns, nil); err != nil {
				continue
			}
			r := newRunner(t, cfg.Hook, p.Name, p.Insns, refs)
			for i := 0; i < 200; i++ {
				if err := r.run(rng); err != nil {
					t.Errorf("%s:%s (accepted): %v", filepath.Base(obj), p.Name, err)
					break
				}
			}
			r.exec.Close()
			ran++
		}
		done()
	}
	files, _ := filepath.Glob("../testdata/verifier/asm/*.s")
	refs, done := liveMaps(t, asmMapSpecs())
	defer done()
	for _, f := range files {
		for _, p := range parseAsmCorpus(t, f) {
			insns, err := asm.Assemble(p.src)
			if err != nil {
				continue
			}
			h := hook.Get(p.hook)
			cfg := verifier.Config{Hook: h, Maps: asmMaps, MaxStack: p.maxStack}
			if _, err := cfg.Verify(insns, nil); err != nil {
				continue
			}
			r := newRunner(t, h, p.name, insns, refs)
			for i := 0; i < 50; i++ {
				if err := r.run(rng); err != nil {
					t.Errorf("%s:%s (accepted): %v", filepath.Base(f), p.name, err)
					break
				}
			}
			r.exec.Close()
			ran++
		}
	}
	if ran < 25 {
		t.Errorf("only %d accepted programs ran", ran)
	}
}

// TestSoundnessRandom generates programs that access the stack, a map
// value and the context, some valid and some not; every accepted one must
// run without a trap.
func TestSoundnessRandom(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 300
	}
	if v, err := strconv.Atoi(os.Getenv("VERIFIER_RANDOM_PROGRAMS")); err == nil && v > 0 {
		n = v // longer runs: VERIFIER_RANDOM_PROGRAMS=100000 go test -run SoundnessRandom
	}
	rng := rand.New(rand.NewPCG(7, 11))
	refs, done := liveMaps(t, asmMapSpecs())
	defer done()
	accepted, rejected, trapsOfRejected, acceptedLoops, acceptedCalls := 0, 0, 0, 0, 0
	codes := map[verifier.Code]int{}
	for i := 0; i < n; i++ {
		src := genProgram(rng)
		insns, err := asm.Assemble(src)
		if err != nil {
			t.Fatalf("generator produced bad assembly: %v\n%s", err, src)
		}
		cfg := verifier.Config{Hook: testHook, Maps: asmMaps}
		_, err = cfg.Verify(insns, nil)
		if err != nil {
			var ve *verifier.Error
			if !errors.As(err, &ve) {
				t.Fatalf("non-verifier error: %v", err)
			}
			codes[ve.Code]++
			rejected++
			// the oracle must be able to fail: rejected memory errors
			// trap at least sometimes when run anyway
			if ve.Code == verifier.StackOutOfBounds || ve.Code == verifier.MemOutOfBounds || ve.Code == verifier.NullDeref {
				eng := vm.NewInterpreter(vm.WithMemLayout(ctxLayout(&testHook.Context)...), vm.WithBudget(1_000_000))
				if x, err := eng.Compile(&vm.Program{Name: "rejected", Insns: insns, Maps: refs, Helpers: maps.HelperTable()}); err == nil {
					r := &runner{h: testHook, exec: x}
					for j := 0; j < 5; j++ {
						if r.run(rng) != nil {
							trapsOfRejected++
							break
						}
					}
					x.Close()
				}
			}
			continue
		}
		accepted++
		if strings.Contains(src, "loop") {
			acceptedLoops++
		}
		if strings.Contains(src, "call local") {
			acceptedCalls++
		}
		r := newRunner(t, testHook, fmt.Sprint("gen", i), insns, refs)
		for j := 0; j < 20; j++ {
			if err := r.run(rng); err != nil {
				t.Errorf("accepted program %d %v:\n%s", i, err, numbered(src))
				break
			}
		}
		r.exec.Close()
	}
	t.Logf("random programs: %d accepted (%d with loops, %d with calls), %d rejected %v; %d rejected memory errors trapped when run anyway", accepted, acceptedLoops, acceptedCalls, rejected, codes, trapsOfRejected)
	if trapsOfRejected == 0 {
		t.Errorf("no rejected program trapped: the oracle does not work")
	}
	if accepted < n/10 || rejected < n/10 {
		t.Errorf("generator is unbalanced: %d accepted, %d rejected", accepted, rejected)
	}
}

func numbered(src string) string {
	var b strings.Builder
	pc := 0
	for _, l := range strings.Split(src, "\n") {
		fmt.Fprintf(&b, "%3d  %s\n", pc, l)
		c := strings.TrimSpace(l)
		if c != "" && !strings.HasSuffix(c, ":") {
			pc++
			if strings.HasPrefix(c, "lddw") {
				pc++
			}
		}
	}
	return b.String()
}
