package verifier_test

import (
	"errors"
	"github.com/ncclbpf/ncclbpf/loader"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/hook"
	"github.com/ncclbpf/ncclbpf/verifier"
)

// asmMaps are the maps every assembly test program sees, by index.
var asmMaps = []*loader.MapSpec{
	{Name: "arr", Type: verifier.MapTypeArray, KeySize: 4, ValueSize: 48, MaxEntries: 16},
	{Name: "hash", Type: verifier.MapTypeHash, KeySize: 8, ValueSize: 8, MaxEntries: 1024},
	{Name: "rb", Type: verifier.MapTypeRingBuf, MaxEntries: 4096},
	{Name: "ro", Type: verifier.MapTypeArray, KeySize: 4, ValueSize: 16, MaxEntries: 1, Freeze: true,
		Flags: verifier.MapFlagReadOnlyProg, Contents: []loader.MapKV{{Key: make([]byte, 4), Value: []byte("%d %d\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00")}}},
	{Name: "agreed", Type: verifier.MapTypeArray, KeySize: 4, ValueSize: 16, MaxEntries: 4, Flags: verifier.MapFlagReadOnlyProg},
	{Name: "wo", Type: verifier.MapTypeArray, KeySize: 4, ValueSize: 16, MaxEntries: 4, Flags: verifier.MapFlagWriteOnlyProg},
	{Name: "rohash", Type: verifier.MapTypeHash, KeySize: 8, ValueSize: 8, MaxEntries: 64, Flags: verifier.MapFlagReadOnlyProg},
}

// asmProgram is one program of an assembly corpus file.
type asmProgram struct {
	name     string
	line     int // line of the "-- name" header
	src      string
	want     string // expected code ("E012"), "" for ok_
	wantPC   int
	hook     string
	maxStack int
	maxInsns int
}

var asmErrRE = regexp.MustCompile(`#\s*ERROR (E\d{3})`)

// parseAsmCorpus splits a file into programs and finds, for each, the pc
// of the annotated instruction: every line that holds an instruction is
// one slot, two for lddw; labels and comments are none.
func parseAsmCorpus(t *testing.T, path string) []*asmProgram {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var progs []*asmProgram
	var cur *asmProgram
	pc := 0
	for i, line := range strings.Split(string(b), "\n") {
		if name, ok := strings.CutPrefix(line, "-- "); ok {
			cur = &asmProgram{name: strings.TrimSpace(name), line: i + 1, hook: "vtest", wantPC: -1}
			progs = append(progs, cur)
			pc = 0
			continue
		}
		if cur == nil {
			continue
		}
		cur.src += line + "\n"
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "# hook:"); ok {
			cur.hook = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "# maxstack:"); ok {
			cur.maxStack, _ = strconv.Atoi(strings.TrimSpace(v))
		}
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "# maxinsns:"); ok {
			cur.maxInsns, _ = strconv.Atoi(strings.TrimSpace(v))
		}
		if m := asmErrRE.FindStringSubmatch(line); m != nil {
			cur.want, cur.wantPC = m[1], pc
		}
		code := strings.TrimSpace(strings.SplitN(line, "#", 2)[0])
		switch {
		case code == "" || strings.HasSuffix(code, ":"):
		case strings.HasPrefix(code, "lddw"):
			pc += 2
		default:
			pc++
		}
	}
	return progs
}

// TestCorpusAsm verifies the programs of testdata/verifier/asm/*.s, which
// cover what clang does not emit (structural faults, raw pointer misuse).
func TestCorpusAsm(t *testing.T) {
	corpusRan["asm"] = true
	files, _ := filepath.Glob("../testdata/verifier/asm/*.s")
	if len(files) == 0 {
		t.Fatal("no assembly corpus")
	}
	for _, f := range files {
		for _, p := range parseAsmCorpus(t, f) {
			where := filepath.Base(f) + ":" + strconv.Itoa(p.line) + ": " + p.name
			insns, err := asm.Assemble(p.src)
			if err != nil {
				t.Errorf("%s: %v", where, err)
				continue
			}
			cfg := verifier.Config{Hook: hook.Get(p.hook), Maps: asmMaps, MaxStack: p.maxStack, MaxInsns: p.maxInsns}
			_, err = cfg.Verify(insns, nil)
			var ve *verifier.Error
			switch {
			case strings.HasPrefix(p.name, "ok_"):
				if err != nil {
					t.Errorf("%s: rejected, want accepted:\n%v", where, explain(err))
				} else {
					stats.accepted++
				}
			case strings.HasPrefix(p.name, "bad_"):
				if p.want == "" {
					t.Errorf("%s: no ERROR annotation", where)
					continue
				}
				if !errors.As(err, &ve) {
					t.Errorf("%s: accepted (err=%v), want %s at pc %d", where, err, p.want, p.wantPC)
					continue
				}
				if ve.Code.String()[:4] != p.want || ve.PC != p.wantPC {
					t.Errorf("%s: got %v at pc %d, want %s at pc %d:\n%s", where, ve.Code, ve.PC, p.want, p.wantPC, ve.Explain())
					continue
				}
				stats.rejected[ve.Code]++
			default:
				t.Errorf("%s: names start with ok_ or bad_", where)
			}
		}
	}
}
