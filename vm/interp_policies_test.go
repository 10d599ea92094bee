package vm_test

import (
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/ncclbpf/ncclbpf/bundle"
	"github.com/ncclbpf/ncclbpf/hook"
	"github.com/ncclbpf/ncclbpf/loader"
	"github.com/ncclbpf/ncclbpf/vm"
)

// layoutEngine compiles each program with the interpreter restricted to its
// hook's context layout (programs are named as in the object).
type layoutEngine map[string]*hook.Context

func (layoutEngine) Name() string { return "interp" }

func (e layoutEngine) Compile(p *vm.Program) (vm.Executable, error) {
	var opts []vm.InterpOption
	if c := e[p.Name]; c != nil {
		opts = append(opts, vm.WithMemLayout(vm.ContextLayout(c)...))
	}
	return vm.NewInterpreter(opts...).Compile(p)
}

// randomContext fills every field of c with a value that is often at an
// edge (0, 1, small, all ones) and otherwise random.
func randomContext(c *hook.Context, rng *rand.Rand) []byte {
	b := make([]byte, c.Size)
	for _, f := range c.Fields {
		for i := range max(f.Array, 1) {
			var v uint64
			switch rng.IntN(6) {
			case 0:
			case 1:
				v = 1
			case 2:
				v = rng.Uint64N(64)
			case 3:
				v = ^uint64(0)
			default:
				v = rng.Uint64()
			}
			off := f.Offset + i*f.Size
			var w [8]byte
			binary.LittleEndian.PutUint64(w[:], v)
			copy(b[off:off+f.Size], w[:f.Size])
		}
	}
	return b
}

// TestPoliciesNeverTrap is the soundness oracle on the shipped policies:
// programs the verifier accepts, run on thousands of random contexts with
// the precise memory model (context fields with their access rights, live
// stack frames, map values), never fault.
func TestPoliciesNeverTrap(t *testing.T) {
	objs, _ := filepath.Glob("../policies/*.bpf.o")
	more, _ := filepath.Glob("../policies/*/*.bpf.o")
	objs = append(objs, more...)
	if len(objs) == 0 {
		t.Skip("no policy objects")
	}
	runs := 2000
	if testing.Short() {
		runs = 200
	}
	for _, obj := range objs {
		t.Run(filepath.Base(obj), func(t *testing.T) {
			data, err := os.ReadFile(obj)
			if err != nil {
				t.Fatal(err)
			}
			coll, err := loader.LoadBytes(data)
			if err != nil {
				t.Fatal(err)
			}
			eng := layoutEngine{}
			for _, p := range coll.Programs {
				if h, err := hook.ForSection(p.Section); err == nil {
					eng[p.Name] = &h.Context
				}
			}
			b, err := bundle.Load(data, bundle.Options{Name: filepath.Base(obj), Engine: eng})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			rng := rand.New(rand.NewPCG(1, 2))
			for _, p := range b.Programs {
				for i := range runs {
					ctx := randomContext(&p.Hook.Context, rng)
					in := append([]byte(nil), ctx...)
					if _, err := p.Exec.Run(ctx); err != nil {
						t.Fatalf("program %s (hook %s), run %d on context % x: %v", p.Name, p.Hook.Name, i, in, err)
					}
				}
			}
		})
	}
}
