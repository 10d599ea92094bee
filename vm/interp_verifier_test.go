package vm_test

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/ncclbpf/ncclbpf/helpers"
	"github.com/ncclbpf/ncclbpf/hook"
	"github.com/ncclbpf/ncclbpf/loader"
	"github.com/ncclbpf/ncclbpf/maps"
	"github.com/ncclbpf/ncclbpf/verifier"
	"github.com/ncclbpf/ncclbpf/vm"
)

// vtestCtx mirrors struct vtest_ctx in testdata/verifier/vtest.h, as
// verifier/hooks_test.go declares it (test hooks are not in the registry
// outside the verifier's tests).
var vtestCtx = hook.Context{
	Name: "vtest_ctx",
	Size: 72,
	Fields: []hook.Field{
		{Name: "op", Offset: 0, Size: 4, Access: hook.Read},
		{Name: "nranks", Offset: 4, Size: 4, Access: hook.Read},
		{Name: "bytes", Offset: 8, Size: 8, Access: hook.Read},
		{Name: "algo", Offset: 16, Size: 4, Access: hook.Read | hook.Write},
		{Name: "proto", Offset: 20, Size: 4, Access: hook.Write},
		{Name: "cost", Offset: 32, Size: 4, Access: hook.Read | hook.Write, Array: 8},
		{Name: "small", Offset: 64, Size: 2, Access: hook.Read},
		{Name: "flags", Offset: 68, Size: 4, Access: hook.Read},
	},
}

func init() {
	all := []helpers.ID{helpers.MapLookupElem, helpers.MapUpdateElem, helpers.MapDeleteElem,
		helpers.KtimeGetNs, helpers.TracePrintk, helpers.GetPrandomU32, helpers.GetSmpProcessorID,
		helpers.RingbufOutput, helpers.RingbufReserve, helpers.RingbufSubmit, helpers.RingbufDiscard}
	hook.Register(&hook.Hook{Name: "vtest", Sections: []string{"vtest", "vtest/"}, Context: vtestCtx,
		Helpers: all, Return: hook.Range{Min: 0, Max: 255}, Doc: "verifier tests"})
	hook.Register(&hook.Hook{Name: "vtest_restricted", Sections: []string{"vtest_restricted"}, Context: vtestCtx,
		Helpers: []helpers.ID{helpers.KtimeGetNs, helpers.GetPrandomU32}, Return: hook.Range{Min: -1, Max: 1},
		Doc: "verifier tests: few helpers"})
}

// TestVerifiedCorpusNeverTraps extends the soundness oracle to the
// verifier's test corpus: every program of testdata/verifier that the
// verifier accepts runs on random contexts, with its hook's context layout,
// without a fault.
func TestVerifiedCorpusNeverTraps(t *testing.T) {
	objs, _ := filepath.Glob("../testdata/verifier/*.o")
	if len(objs) == 0 {
		t.Skip("no verifier corpus")
	}
	runs := 1000
	if testing.Short() {
		runs = 100
	}
	maps.CapturePrintk(true) // keep bpf_printk output off the test log
	t.Cleanup(func() { maps.DrainPrintk(); maps.CapturePrintk(false) })
	accepted := 0
	for _, obj := range objs {
		data, err := os.ReadFile(obj)
		if err != nil {
			t.Fatal(err)
		}
		coll, err := loader.LoadBytes(data)
		if err != nil {
			continue // the loader's own rejections are not this test's concern
		}
		refs, infos := liveMaps(t, coll)
		for _, lp := range coll.Programs {
			h, err := hook.ForSection(lp.Section)
			if err != nil {
				continue
			}
			cfg := verifier.Config{Hook: h, Maps: infos}
			if _, err := cfg.Verify(lp.Insns, nil); err != nil {
				continue
			}
			accepted++
			x, err := vm.NewInterpreter(vm.WithMemLayout(vm.ContextLayout(&h.Context)...)).Compile(
				&vm.Program{Name: lp.Name, Insns: lp.Insns, Maps: refs, Helpers: maps.HelperTable()})
			if err != nil {
				t.Errorf("%s: %s: verified but the interpreter refuses it: %v", filepath.Base(obj), lp.Name, err)
				continue
			}
			rng := rand.New(rand.NewPCG(3, 4))
			for i := range runs {
				ctx := randomContext(&h.Context, rng)
				in := append([]byte(nil), ctx...)
				if _, err := x.Run(ctx); err != nil {
					t.Errorf("%s: %s (hook %s) run %d on context % x: %v", filepath.Base(obj), lp.Name, h.Name, i, in, err)
					break
				}
			}
			x.Close()
			maps.DrainPrintk()
		}
	}
	t.Logf("%d verified programs ran %d times each without a fault", accepted, runs)
	if accepted == 0 {
		t.Fatal("the verifier accepted no program of the corpus")
	}
}

// liveMaps creates the maps of coll (global data with its contents) and
// returns their references and the specs the verifier checks against.
func liveMaps(t *testing.T, coll *loader.CollectionSpec) ([]vm.MapRef, []*loader.MapSpec) {
	refs := make([]vm.MapRef, len(coll.Maps))
	for i, ms := range coll.Maps {
		m, err := maps.New(*ms)
		if err != nil {
			t.Fatalf("map %s: %v", ms.Name, err)
		}
		t.Cleanup(func() { m.Close() })
		refs[i] = m.Ref()
	}
	return refs, coll.Maps
}
