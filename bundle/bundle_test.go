package bundle

import (
	"encoding/binary"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/hook"
	"github.com/ncclbpf/ncclbpf/loader"
	"github.com/ncclbpf/ncclbpf/policies"
	"github.com/ncclbpf/ncclbpf/vm"
)

func tunerCtx(coll uint32, nBytes uint64, ranks, nodes uint32, avail uint32) []byte {
	b := make([]byte, hook.TunerCtxSize)
	le := binary.LittleEndian
	le.PutUint64(b[16:], nBytes)
	le.PutUint32(b[24:], coll)
	le.PutUint32(b[28:], 1)
	le.PutUint32(b[36:], ranks)
	le.PutUint32(b[40:], nodes)
	le.PutUint32(b[44:], nodes)
	le.PutUint32(b[60:], avail)
	le.PutUint32(b[148:], 0xffffffff) // algorithm -1
	le.PutUint32(b[152:], 0xffffffff) // protocol -1
	return b
}

// TestEmbeddedPolicies loads every embedded policy with both engines and
// runs size_aware on a few contexts: the JIT and the interpreter agree with
// the policy's C source.
func TestEmbeddedPolicies(t *testing.T) {
	for _, engine := range []vm.Engine{nil, vm.NewInterpreter()} {
		for _, name := range policies.Names() {
			obj, _ := policies.Object(name)
			b, err := Load(obj, Options{Name: name, Engine: engine})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			p := b.Program(hook.Tuner)
			if p == nil {
				t.Fatalf("%s: no tuner program", name)
			}
			if name == "size_aware" {
				all := uint32(1<<21 - 1)
				for _, tc := range []struct {
					coll         uint32
					n            uint64
					ranks, nodes uint32
					avail        uint32
					ret          uint64
					algo, proto  int32
				}{
					{4, 8 << 20, 8, 1, all, 0, 1, 2},
					{4, 8 << 20, 9, 1, all, 1, -1, -1},
					{4, 8 << 20, 8, 2, all, 1, -1, -1},
					{4, 1 << 20, 8, 1, all, 1, -1, -1},
					{2, 8 << 20, 8, 1, all, 1, -1, -1},
					{4, 8 << 20, 8, 1, all &^ (1 << 5), 1, -1, -1},
				} {
					ctx := tunerCtx(tc.coll, tc.n, tc.ranks, tc.nodes, tc.avail)
					r, err := p.Exec.Run(ctx)
					a := int32(binary.LittleEndian.Uint32(ctx[148:]))
					pr := int32(binary.LittleEndian.Uint32(ctx[152:]))
					if err != nil || r != tc.ret || a != tc.algo || pr != tc.proto {
						t.Errorf("size_aware %+v: ret %d, %v, algo %d proto %d", tc, r, err, a, pr)
					}
				}
			}
			if err := b.Close(); err != nil {
				t.Error(err)
			}
		}
	}
}

func TestLoadErrors(t *testing.T) {
	obj, _ := policies.Object("size_aware")
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{Vars: []Var{{"nope", 1}}}, "no such global variable"},
		{Options{Vars: []Var{{"max_ranks", 1 << 40}}}, "does not fit"},
		{Options{Data: map[string][]byte{"size_lo": {1, 2}}}, "2 bytes given"},
	} {
		_, err := Load(obj, tc.opts)
		if err == nil || !errors.Is(err, ErrVariable) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.opts, err, tc.want)
		}
	}
	if _, err := Load([]byte("not an ELF"), Options{Name: "junk"}); err == nil || !strings.HasPrefix(err.Error(), "junk: ") {
		t.Errorf("junk: %v", err)
	}
	b, err := Load(obj, Options{Vars: []Var{{"size_lo", 1}, {"max_ranks", 2}}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := tunerCtx(4, 2, 4, 1, 1<<21-1)
	if r, _ := b.Program(hook.Tuner).Exec.Run(ctx); r != 1 {
		t.Errorf("max_ranks=2 did not reach the program: 4 ranks gave %d", r)
	}
}

func TestContextReads(t *testing.T) {
	const costOff, costSize, maskOff, decisionOff, decisionSize = 64, 84, 60, 148, 12
	for _, tc := range []struct {
		policy               string
		cost, mask, decision bool
	}{
		{"noop", false, false, false},
		{"size_aware", false, true, true},
		{"rules", false, true, true},
	} {
		obj, _ := policies.Object(tc.policy)
		b, err := Load(obj, Options{})
		if err != nil {
			t.Fatal(err)
		}
		p := b.Program(hook.Tuner)
		if got := p.ReadsContext(costOff, costSize); got != tc.cost {
			t.Errorf("%s reads the cost table: %v, want %v", tc.policy, got, tc.cost)
		}
		if got := p.ReadsContext(maskOff, 4); got != tc.mask {
			t.Errorf("%s reads avail_mask: %v, want %v", tc.policy, got, tc.mask)
		}
		if got := p.WritesContext(decisionOff, decisionSize); got != tc.decision {
			t.Errorf("%s writes a decision: %v, want %v", tc.policy, got, tc.decision)
		}
		if !p.ReadsContext(24, 4) && tc.policy != "noop" {
			t.Errorf("%s: coll_type not seen as read", tc.policy)
		}
		b.Close()
	}
}

// TestDecidesOn: the maps a tuner reads and no program writes are the ones
// the control plane must not write at an arbitrary moment; maps a program
// writes (measurements) are not among them.
func TestDecidesOn(t *testing.T) {
	rules, _ := policies.Object("rules")
	b, err := Load(rules, Options{Name: "rules"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	n := 0
	for _, m := range b.Maps {
		if b.DecidesOn(m) {
			n++
		}
	}
	if n == 0 {
		t.Errorf("rules: the tuner's rule table is not among the maps it decides on")
	}
	obj, err := os.ReadFile("../policies/adaptive/adaptive.bpf.o")
	if err != nil {
		t.Fatal(err)
	}
	a, err := Load(obj, Options{Name: "adaptive"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if m := a.Map("local"); m == nil || a.DecidesOn(m) {
		t.Errorf("adaptive: the profiler-written map local must not count as uniform")
	}
	if m := a.Map("agreed"); m == nil || !a.DecidesOn(m) {
		t.Errorf("adaptive: the tuner decides on the agreed map")
	}
}

// TestConfigureOrder: Configure sets Data by variable name, whatever the
// order of the map holding it, so that the first bad setting reported is
// always the same one (every load, the CLI's included, goes through it).
func TestConfigureOrder(t *testing.T) {
	obj, _ := policies.Object("size_aware")
	spec, err := loader.LoadBytes(obj)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range spec.Variables {
		names = append(names, v.Name)
	}
	if len(names) < 2 {
		t.Fatalf("size_aware has variables %v, want at least two", names)
	}
	data := map[string][]byte{}
	for _, n := range names {
		data[n] = []byte{1} // no variable of size_aware is one byte
	}
	want := names[0] + ": 1 bytes given" // Variables are sorted by name
	for i := 0; i < 32; i++ {
		_, err := Configure(spec, nil, data)
		if err == nil || !errors.Is(err, ErrVariable) || !strings.Contains(err.Error(), want) {
			t.Fatalf("try %d: %v, want an error naming %q", i, err, want)
		}
	}
	// Configure leaves spec alone and returns a copy with the values set.
	_, ro := spec.Map(".rodata")
	before := append([]byte(nil), ro.Data()...)
	got, err := Configure(spec, []Var{{Name: names[0], Value: 7}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v := got.Variable(names[0]).Value(); len(v) == 0 || v[0] != 7 {
		t.Errorf("%s after Configure: %x, want 7", names[0], v)
	}
	if string(ro.Data()) != string(before) {
		t.Errorf("Configure changed the spec it was given")
	}
}

// TestVerifyBeforeMaps: LoadSpec verifies before it creates maps, so a
// rejected program is reported as such even when a map could not be
// created either, and no map is made for a program that will not run.
func TestVerifyBeforeMaps(t *testing.T) {
	obj, _ := policies.Object("size_aware")
	orig, err := loader.LoadBytes(obj)
	if err != nil {
		t.Fatal(err)
	}
	spec := orig.Copy()
	bad := *spec.Programs[0]
	if bad.Insns, err = asm.Assemble("mov r0, 7\nexit"); err != nil {
		t.Fatal(err)
	}
	bad.Lines, bad.Funcs = nil, []loader.Func{{Name: bad.Name, Start: 0, End: len(bad.Insns)}}
	spec.Programs[0] = &bad
	spec.Maps[0].MaxEntries = 0 // maps.New refuses it
	if _, _, err := CreateMaps(spec, nil, nil); err == nil {
		t.Fatalf("map %s with max_entries 0 was created", spec.Maps[0].Name)
	}
	_, err = LoadSpec(spec, Options{Name: "bad"})
	if err == nil || !strings.Contains(err.Error(), "rejected") {
		t.Errorf("error %v, want the verifier's rejection of %s", err, bad.Name)
	}
}
