package loader

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/asm"
)

// FuzzLoad feeds arbitrary bytes to LoadBytes. The oracle: no panic (a
// recovered one counts as a failure: it is a bug that a malformed object
// reached), exactly one of collection and error, a collection that keeps
// every invariant validate checks, and the same collection on a second load.
//
// The seed corpus is the committed test objects plus
// testdata/fuzz/FuzzLoad: truncations and bit flips of them (regenerate with
// LOADER_WRITE_CORPUS=1 go test -run TestWriteFuzzCorpus ./loader/) and
// found-*, inputs that widened coverage in fuzzing runs.
func FuzzLoad(f *testing.F) {
	objs, err := filepath.Glob("../testdata/loader/*.o")
	if err != nil || len(objs) == 0 {
		f.Fatalf("no test objects: %v", err)
	}
	for _, o := range objs {
		b, err := os.ReadFile(o)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := LoadBytes(b)
		var pe *panicError
		if errors.As(err, &pe) {
			t.Fatalf("recovered panic: %v\n%s", pe.v, pe.stack)
		}
		if (c == nil) == (err == nil) {
			t.Fatalf("collection %v and error %v", c, err)
		}
		if c == nil {
			return
		}
		if err := checkCollection(c); err != nil {
			t.Fatal(err)
		}
		again, err := LoadBytes(b)
		if err != nil {
			t.Fatalf("second load failed: %v", err)
		}
		if s1, s2 := summary(c), summary(again); s1 != s2 {
			t.Fatalf("second load differs:\n%s\n---\n%s", s1, s2)
		}
	})
}

// checkCollection re-checks a loaded collection from the outside.
func checkCollection(c *CollectionSpec) error {
	if len(c.Programs) == 0 {
		return errors.New("no programs but no error")
	}
	for i, m := range c.Maps {
		if i > 0 && c.Maps[i-1].Name >= m.Name {
			return fmt.Errorf("maps not sorted: %q, %q", c.Maps[i-1].Name, m.Name)
		}
		if m.IsGlobalData() && uint32(len(m.Data())) != m.ValueSize {
			return fmt.Errorf("map %q: %d bytes of contents, value size %d", m.Name, len(m.Data()), m.ValueSize)
		}
	}
	for _, v := range c.Variables {
		if v.Map < 0 || v.Map >= len(c.Maps) || uint64(v.Offset)+uint64(v.Size) > uint64(c.Maps[v.Map].ValueSize) {
			return fmt.Errorf("variable %q outside its map", v.Name)
		}
	}
	for _, p := range c.Programs {
		if err := p.validate(c.Maps); err != nil {
			return fmt.Errorf("program %q: %w", p.Name, err)
		}
		for pc, ins := range p.Insns {
			if ins.Op == asm.OpCall && ins.Src == asm.PseudoCall {
				if f := p.FuncAt(pc + 1 + int(ins.Imm)); f == nil || f.Start != pc+1+int(ins.Imm) {
					return fmt.Errorf("program %q: pc %d: call into the middle of a function", p.Name, pc)
				}
			}
		}
	}
	return nil
}

// TestWriteFuzzCorpus writes the seed corpus of FuzzLoad: truncations and
// bit flips of the test objects, aimed at the parts of the ELF file the
// loader reads (headers, section table, symbols, relocations, BTF, code).
// It only runs when LOADER_WRITE_CORPUS=1; the output is deterministic.
func TestWriteFuzzCorpus(t *testing.T) {
	if os.Getenv("LOADER_WRITE_CORPUS") != "1" {
		t.Skip("set LOADER_WRITE_CORPUS=1 to rewrite testdata/fuzz/FuzzLoad")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzLoad")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Inputs kept from fuzzing runs are named found-*; keep them.
	old, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, o := range old {
		if !strings.HasPrefix(filepath.Base(o), "found-") {
			if err := os.Remove(o); err != nil {
				t.Fatal(err)
			}
		}
	}
	write := func(name string, b []byte) {
		content := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewSource(20261202))
	// Small objects keep the corpus small; policy.o has the most features.
	for _, name := range []string{"v4", "policy", "unsupported_extern"} {
		obj, err := os.ReadFile(filepath.Join("..", "testdata", "loader", name+".o"))
		if err != nil {
			t.Fatal(err)
		}
		f, err := elf.NewFile(bytes.NewReader(obj))
		if err != nil {
			t.Fatal(err)
		}
		for i, frac := range []int{1, 4, 7, 9} {
			write(fmt.Sprintf("%s-trunc-%d", name, i), obj[:len(obj)*frac/10])
		}
		regions := map[string][2]int{"header": {0, 64}}
		for _, s := range f.Sections {
			if s.Type == elf.SHT_NOBITS || s.Size == 0 {
				continue
			}
			switch s.Name {
			case ".symtab", ".BTF", ".BTF.ext", ".maps", "maps", ".text", "tuner", ".reltuner", ".rel.text", ".rodata", ".data":
				regions[s.Name] = [2]int{int(s.Offset), int(s.Offset + s.Size)}
			}
		}
		// The section header table: e_shoff is at byte 40 of the ELF header.
		regions["section headers"] = [2]int{int(binary.LittleEndian.Uint64(obj[40:])), len(obj)}
		keys := make([]string, 0, len(regions))
		for k := range regions {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			r := regions[k]
			if r[1] <= r[0] || r[1] > len(obj) {
				continue
			}
			flips := 2
			if len(obj) > 10000 {
				// Keep the corpus small: flip the big object only where
				// the small ones have nothing (legacy maps, relocations
				// against .text and data).
				switch k {
				case "maps", ".rel.text", ".reltuner", ".maps", ".data":
					flips = 1
				default:
					flips = 0
				}
			}
			for j := 0; j < flips; j++ {
				b := bytes.Clone(obj)
				for n := 0; n < 1+j*3; n++ {
					bit := r[0]*8 + rng.Intn((r[1]-r[0])*8)
					b[bit/8] ^= 1 << (bit % 8)
				}
				write(fmt.Sprintf("%s-flip-%s-%d", name, sanitize(k), j), b)
			}
		}
	}
}

func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			b[i] = '_'
		}
	}
	return string(b)
}
