package verifier_test

import (
	"errors"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/hook"
	"github.com/ncclbpf/ncclbpf/loader"
	"github.com/ncclbpf/ncclbpf/maps"
	"github.com/ncclbpf/ncclbpf/verifier"
)

// The adversarial corpus of testdata/verifier/redteam: programs written to
// break the verifier (pointer arithmetic across joins, pointer ordering
// comparisons, pruning with many linked copies, references merged at
// joins, map access flags, bpf_printk arguments, return width, and the
// classic bound-tracking, spill and helper-argument holes), each of which
// must be refused at its annotated line with its annotated code, and safe
// clang output around the same constructions (ok_) that must stay accepted.
// The rules are those of the main corpus (corpus_test.go for C objects,
// asm_corpus_test.go for assembly); the programs are kept apart so that a
// regression in one class names its file.

// redteamAsmMaps are the maps of the assembly red-team programs: the first
// four of the main assembly corpus (0 arr, 1 hash, 2 rb, 3 ro, here with
// contents unknown to the verifier), then 4 small (an array of 8-byte
// values, 4 entries), 5 arr2 (a second array like arr), 6 pcpu (a
// per-CPU array of 8-byte values, 4 entries) and 7 lru (an LRU hash of
// 4-byte keys and 8-byte values, 8 entries).
var redteamAsmMaps = []*loader.MapSpec{
	asmMaps[0], asmMaps[1], asmMaps[2],
	{Name: "ro", Type: verifier.MapTypeArray, KeySize: 4, ValueSize: 16, MaxEntries: 1, Freeze: true, Flags: verifier.MapFlagReadOnlyProg},
	{Name: "small", Type: verifier.MapTypeArray, KeySize: 4, ValueSize: 8, MaxEntries: 4},
	{Name: "arr2", Type: verifier.MapTypeArray, KeySize: 4, ValueSize: 48, MaxEntries: 16},
	{Name: "pcpu", Type: verifier.MapTypePercpuArray, KeySize: 4, ValueSize: 8, MaxEntries: 4},
	{Name: "lru", Type: verifier.MapTypeLRUHash, KeySize: 4, ValueSize: 8, MaxEntries: 8},
}

// redteamStats counts the red-team verdicts per file.
type redteamStats struct {
	rejected map[string]int // file -> bad_ programs refused as annotated
	bad      map[string]int // file -> bad_ programs present
	accepted int
}

var rtStats = redteamStats{rejected: map[string]int{}, bad: map[string]int{}}

// checkVerdict applies the corpus rule to one program: ok_ accepted, bad_
// refused with the wanted code where wanted. It returns a failure message
// or "".
func checkVerdict(name string, err error, wantCode string, wantAt string, gotAt func(*verifier.Error) string) string {
	var ve *verifier.Error
	switch {
	case strings.HasPrefix(name, "ok_"):
		if err != nil {
			return "rejected, want accepted:\n" + explain(err)
		}
	case strings.HasPrefix(name, "bad_"):
		if !errors.As(err, &ve) {
			if err != nil {
				return "failed without a verification error: " + err.Error()
			}
			return "accepted, want " + wantCode + " at " + wantAt
		}
		if got := gotAt(ve); ve.Code.String()[:4] != wantCode || got != wantAt {
			return "rejected with " + ve.Code.String() + " at " + got + ", want " + wantCode + " at " + wantAt + ":\n" + ve.Explain()
		}
	default:
		return "program names must start with ok_ or bad_"
	}
	return ""
}

// TestRedteamC verifies every program of testdata/verifier/redteam/*.o
// against the ERROR annotations of its C source. Programs attach to the
// test hooks (vtest) or to the product's hooks (tuner, profiler/...)
// through their ELF section.
func TestRedteamC(t *testing.T) {
	objs, _ := filepath.Glob("../testdata/verifier/redteam/*.o")
	if len(objs) == 0 {
		t.Fatal("no objects in testdata/verifier/redteam (run scripts/build-bpf.sh)")
	}
	for _, obj := range objs {
		src := strings.TrimSuffix(obj, ".o") + ".c"
		file := filepath.Base(src)
		want := annotations(t, src)
		hit := map[int]string{}
		coll, err := loader.LoadFile(obj)
		if err != nil {
			t.Fatalf("%s: %v", obj, err)
		}
		for _, p := range coll.Programs {
			name := file + ":" + p.Name
			cfg := configFor(t, coll, p)
			_, err := cfg.Verify(p.Insns, nil)
			var ve *verifier.Error
			wantAt, wantCode := "an annotated line", "its annotated code"
			if errors.As(err, &ve) {
				if c, ok := want[ve.Line]; ok {
					wantAt, wantCode = "line "+strconv.Itoa(ve.Line), c
				}
			}
			if strings.HasPrefix(p.Name, "bad_") {
				rtStats.bad[file]++
			}
			msg := checkVerdict(p.Name, err, wantCode, wantAt, func(ve *verifier.Error) string { return "line " + strconv.Itoa(ve.Line) })
			if msg != "" {
				t.Errorf("%s: %s", name, msg)
				continue
			}
			if ve != nil {
				if hit[ve.Line] != "" {
					t.Errorf("%s: line %d already matched by %s", name, ve.Line, hit[ve.Line])
					continue
				}
				hit[ve.Line] = p.Name
				rtStats.rejected[file]++
			} else {
				rtStats.accepted++
			}
		}
		var lines []int
		for line := range want {
			if hit[line] == "" {
				lines = append(lines, line)
			}
		}
		sort.Ints(lines)
		for _, line := range lines {
			t.Errorf("%s:%d: annotation %s matched by no program", file, line, want[line])
		}
	}
}

// TestRedteamAsm verifies the programs of testdata/verifier/redteam/*.s
// (the format of testdata/verifier/asm, with the maps of redteamAsmMaps):
// the constructions clang does not emit.
func TestRedteamAsm(t *testing.T) {
	files, _ := filepath.Glob("../testdata/verifier/redteam/*.s")
	if len(files) == 0 {
		t.Fatal("no assembly programs in testdata/verifier/redteam")
	}
	for _, f := range files {
		file := filepath.Base(f)
		for _, p := range parseAsmCorpus(t, f) {
			where := file + ":" + strconv.Itoa(p.line) + ": " + p.name
			if strings.HasPrefix(p.name, "bad_") {
				rtStats.bad[file]++
				if p.want == "" {
					t.Errorf("%s: no ERROR annotation", where)
					continue
				}
			}
			insns, err := asm.Assemble(p.src)
			if err != nil {
				t.Errorf("%s: %v", where, err)
				continue
			}
			h := hook.Get(p.hook)
			if h == nil {
				t.Errorf("%s: no hook %q", where, p.hook)
				continue
			}
			cfg := verifier.Config{Hook: h, Maps: redteamAsmMaps, MaxStack: p.maxStack, MaxInsns: p.maxInsns}
			_, err = cfg.Verify(insns, nil)
			msg := checkVerdict(p.name, err, p.want, "pc "+strconv.Itoa(p.wantPC), func(ve *verifier.Error) string { return "pc " + strconv.Itoa(ve.PC) })
			switch {
			case msg != "":
				t.Errorf("%s: %s", where, msg)
			case err == nil:
				rtStats.accepted++
			default:
				rtStats.rejected[file]++
			}
		}
	}
}

// TestRedteamSize runs after the two corpus tests (source order) and checks
// that the corpus keeps its size: at least 120 unsafe programs and 20 safe
// ones, and every file holds unsafe programs. It reports the refusals per
// file.
func TestRedteamSize(t *testing.T) {
	if len(rtStats.bad) == 0 {
		return // the corpus tests did not run (-run filter)
	}
	total, refused := 0, 0
	var lines []string
	for f, n := range rtStats.bad {
		total += n
		refused += rtStats.rejected[f]
		lines = append(lines, f+": "+strconv.Itoa(rtStats.rejected[f])+"/"+strconv.Itoa(n)+" refused as annotated")
	}
	sort.Strings(lines)
	t.Logf("red-team corpus: %d/%d unsafe programs refused as annotated, %d safe accepted:\n%s",
		refused, total, rtStats.accepted, strings.Join(lines, "\n"))
	if total < 120 || rtStats.accepted < 20 {
		t.Errorf("red-team corpus too small: %d unsafe programs (want >= 120), %d safe accepted (want >= 20)", total, rtStats.accepted)
	}
}

// redteamMapSpecs returns live-map specs for infos, with the first 8 keys
// of every hash map present (values zero), so that lookups succeed and
// the programs reach their pointer arithmetic.
func redteamMapSpecs(specs []maps.Spec) []maps.Spec {
	for i := range specs {
		s := &specs[i]
		if s.Type != verifier.MapTypeHash || s.Contents != nil {
			continue
		}
		for k := 0; k < 8; k++ {
			key := make([]byte, s.KeySize)
			key[0] = byte(k)
			s.Contents = append(s.Contents, maps.KV{Key: key, Value: make([]byte, s.ValueSize)})
		}
	}
	return specs
}

// TestRedteamAcceptedNeverTrap is the soundness oracle on the red-team
// corpus: every program the verifier accepts (the ok_ ones, and any bad_
// one a regression lets through) runs on the reference interpreter with
// random contexts and populated maps, and must neither trap, nor run out
// of its instruction budget, nor return outside the hook's range. A bad_
// program reported here is one that is both accepted and shown unsafe by
// running it. Against a verifier that accepts the pointer-difference,
// wraparound, pruning, merged-record or read-only-map programs, this test
// fails on each of them (they trap on the interpreter): that is the
// mutation it catches.
func TestRedteamAcceptedNeverTrap(t *testing.T) {
	maps.CapturePrintk(true)
	defer maps.CapturePrintk(false)
	rng := rand.New(rand.NewPCG(3, 4))
	ran := 0
	try := func(where string, r *runner) {
		defer r.exec.Close()
		for i := 0; i < 50; i++ {
			if err := r.run(rng); err != nil {
				t.Errorf("%s (accepted): %v", where, err)
				return
			}
		}
	}
	objs, _ := filepath.Glob("../testdata/verifier/redteam/*.o")
	for _, obj := range objs {
		coll, err := loader.LoadFile(obj)
		if err != nil {
			t.Fatal(err)
		}
		refs, done := liveMaps(t, redteamMapSpecs(loaderMapSpecs(coll)))
		for _, p := range coll.Programs {
			cfg := configFor(t, coll, p)
			if _, err := cfg.Verify(p.Insns, nil); err != nil {
				continue
			}
			try(filepath.Base(obj)+":"+p.Name, newRunner(t, cfg.Hook, p.Name, p.Insns, refs))
			ran++
		}
		done()
	}
	var specs []maps.Spec
	for _, m := range redteamAsmMaps {
		s := maps.Spec{Name: m.Name, Type: m.Type, KeySize: m.KeySize, ValueSize: m.ValueSize, MaxEntries: m.MaxEntries}
		if m.Freeze {
			s.Flags = maps.FlagRdonlyProg
		}
		specs = append(specs, s)
	}
	refs, done := liveMaps(t, redteamMapSpecs(specs))
	defer done()
	files, _ := filepath.Glob("../testdata/verifier/redteam/*.s")
	for _, f := range files {
		for _, p := range parseAsmCorpus(t, f) {
			insns, err := asm.Assemble(p.src)
			h := hook.Get(p.hook)
			if err != nil || h == nil {
				continue
			}
			cfg := verifier.Config{Hook: h, Maps: redteamAsmMaps, MaxStack: p.maxStack, MaxInsns: p.maxInsns}
			if _, err := cfg.Verify(insns, nil); err != nil {
				continue
			}
			try(filepath.Base(f)+":"+strconv.Itoa(p.line)+": "+p.name, newRunner(t, h, p.name, insns, refs))
			ran++
		}
	}
	if ran < 20 {
		t.Errorf("only %d accepted red-team programs ran", ran)
	}
}
