package enginetest

import (
	"os"
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/bundle"
	"github.com/ncclbpf/ncclbpf/hook"
	"github.com/ncclbpf/ncclbpf/maps"
	"github.com/ncclbpf/ncclbpf/vm"
)

// The programs of testdata/helpers.bpf.c, one hook each (a bundle has one
// program per hook); the hooks are testHook with another name and section.
var bpfHooks = []string{"update", "lookup", "delete", "add", "ring", "printk"}

func init() {
	for _, n := range bpfHooks {
		h := *testHook
		h.Name = "enginetest/" + n
		h.Sections = []string{h.Name}
		hook.Register(&h)
	}
}

// loadBundle loads testdata/helpers.bpf.o on e with scale = 3.
func loadBundle(t *testing.T, e vm.Engine) *bundle.Bundle {
	t.Helper()
	obj, err := os.ReadFile("testdata/helpers.bpf.o")
	if err != nil {
		t.Fatal(err)
	}
	b, err := bundle.Load(obj, bundle.Options{Name: "helpers.bpf.o", Engine: e, Vars: []bundle.Var{{Name: "scale", Value: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func bundleMap(t *testing.T, b *bundle.Bundle, name string) *maps.Map {
	t.Helper()
	if m := b.Map(name); m != nil {
		return m
	}
	var names []string
	for _, m := range b.Maps {
		names = append(names, m.Name())
	}
	t.Fatalf("no map %q in the bundle (maps: %s)", name, strings.Join(names, ", "))
	return nil
}

// TestBundleHelpers runs the C programs through bundle.Load (loader,
// verifier, engine) on both engines.
func TestBundleHelpers(t *testing.T) {
	onEngines(t, func(t *testing.T, e vm.Engine) {
		lockThread(t)
		b := loadBundle(t, e)
		prog := func(n string) vm.Executable {
			p := b.Program("enginetest/" + n)
			if p == nil {
				t.Fatalf("no program for hook enginetest/%s", n)
			}
			return p.Exec
		}
		hash, lru, array := bundleMap(t, b, "hash"), bundleMap(t, b, "lru"), bundleMap(t, b, "array")
		calls := 0

		upd := prog("update")
		expect(t, "update NOEXIST 1", run(t, upd, Ctx{Key: 1, Val: 5, Flags: fNoExist}), 0)
		expect(t, "update NOEXIST 1 again", run(t, upd, Ctx{Key: 1, Val: 6, Flags: fNoExist}), eEXIST)
		expect(t, "update EXIST 2 (missing)", run(t, upd, Ctx{Key: 2, Val: 6, Flags: fExist}), eNOENT)
		expect(t, "update flags 9", run(t, upd, Ctx{Key: 2, Val: 6, Flags: 9}), eINVAL)
		for k := uint64(2); k <= 4; k++ {
			expect(t, "update ANY (filling)", run(t, upd, Ctx{Key: k, Val: k}), 0)
		}
		expect(t, "update ANY 5 into a full map", run(t, upd, Ctx{Key: 5, Val: 5}), eE2BIG)
		calls += 8
		wantGo(t, hash, u64(1), 15, 1) // val * scale, with scale = 3 set at load time
		wantGo(t, hash, u64(4), 12, 4)

		look := prog("lookup")
		r0, c := runCtx(t, look, Ctx{Key: 1})
		expect(t, "lookup 1", r0, 15)
		if c.Out != 1 {
			t.Errorf("LRU lookup of the key just stored: out %d, want 1", c.Out)
		}
		r0, _ = runCtx(t, look, Ctx{Key: 9})
		expect(t, "lookup 9 (missing)", r0, ^uint64(0))
		for k := uint64(10); k < 20; k++ { // more keys than the LRU holds
			if _, c := runCtx(t, look, Ctx{Key: k}); c.Out != k {
				t.Fatalf("LRU key %d: out %d", k, c.Out)
			}
		}
		calls += 12
		wantKeys(t, lru, 16, 17, 18, 19)

		del := prog("delete")
		r0, c = runCtx(t, del, Ctx{Key: 2})
		expect(t, "delete 2", r0, 0)
		expect(t, "array delete", c.Out, eINVAL)
		expect(t, "delete 2 again", run(t, del, Ctx{Key: 2}), eNOENT)
		calls += 2
		wantKeys(t, hash, 1, 3, 4)

		add := prog("add")
		for i := uint64(1); i <= 10; i++ {
			r0, c := runCtx(t, add, Ctx{Key: 6, Val: i})
			expect(t, "add", r0, i*(i+1)/2)
			if c.Out != uint64(maps.ThisSlot()) {
				t.Errorf("bpf_get_smp_processor_id = %d, slot %d", c.Out, maps.ThisSlot())
			}
		}
		wantGo(t, array, u32(2), 55, 0)

		ring := bundleMap(t, b, "ring")
		rp := prog("ring")
		before := monotonicNs(t)
		expect(t, "ring", run(t, rp, Ctx{Key: 1, Val: 7}), 0)
		expect(t, "ring with discard", run(t, rp, Ctx{Key: 3, Val: 8, Flags: 1}), 0)
		after := monotonicNs(t)
		var evs [][3]uint64
		if _, err := ring.ReadRing(func(r []byte) bool {
			if len(r) == 24 {
				evs = append(evs, [3]uint64{le.Uint64(r), le.Uint64(r[8:]), le.Uint64(r[16:])})
			} else {
				t.Errorf("ring record of %d bytes, want 24", len(r))
			}
			return true
		}); err != nil {
			t.Fatal(err)
		}
		if len(evs) != 3 || evs[0][0] != 1 || evs[1][0] != 2 || evs[2][0] != 4 || evs[2][1] != 8 {
			t.Fatalf("ring events %v, want keys 1, 2 (output), 4 (output; 3 discarded)", evs)
		}
		if ts := evs[0][2]; ts < before || ts > after {
			t.Errorf("event time %d outside [%d, %d]", ts, before, after)
		}
		if evs[1][2]>>32 != 0 {
			t.Errorf("bpf_get_prandom_u32 gave %#x", evs[1][2])
		}

		capturePrintk(t)
		want := "key=42 scale=3 val=-1"
		expect(t, "printk", run(t, prog("printk"), Ctx{Key: 42, Val: 1<<32 - 1}), uint64(len(want)))
		if got := maps.DrainPrintk(); len(got) != 1 || got[0] != want {
			t.Errorf("printk lines %q, want [%q]", got, want)
		}

		// The atomic counter in .bss.
		for _, m := range b.Maps {
			if strings.HasSuffix(m.Name(), ".bss") {
				v, err := m.Lookup(u32(0))
				if err != nil {
					t.Fatal(err)
				}
				if n := le.Uint64(v); n != uint64(calls) {
					t.Errorf(".bss calls = %d, want %d", n, calls)
				}
				return
			}
		}
		t.Errorf("no .bss map in the bundle")
	})
}
