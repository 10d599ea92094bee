package hook

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// headerFieldDocs returns, for struct name in the C header text src, each
// member's declaration line together with its comment (the lines up to the
// next member), keyed by member name.
func headerFieldDocs(t *testing.T, src, name string) map[string]string {
	t.Helper()
	start := strings.Index(src, "struct "+name+" {")
	if start < 0 {
		t.Fatalf("struct %s not found in the header", name)
	}
	end := strings.Index(src[start:], "\n};")
	if end < 0 {
		t.Fatalf("struct %s has no end", name)
	}
	body := src[start : start+end]
	decl := regexp.MustCompile(`^\s*(?:__[us](?:8|16|32|64))\s+(\w+)\s*(?:\[[^\]]*\])*\s*;`)
	docs := map[string]string{}
	cur := ""
	for _, line := range strings.Split(body, "\n")[1:] {
		if m := decl.FindStringSubmatch(line); m != nil {
			cur = m[1]
			docs[cur] = line
			continue
		}
		if cur != "" {
			docs[cur] += "\n" + line
		}
	}
	return docs
}

// TestHeaderMarksRankScope checks that the policy author's headers say, for
// every input of every hook context, whether it is the same on every rank of
// the communicator ("[uniform") or may differ ("[local]"), and that this is
// what the hook description (Field.Scope) says.
func TestHeaderMarksRankScope(t *testing.T) {
	for _, c := range []struct {
		file string
		ctx  Context
	}{
		{"../include/ncclbpf.h", Get(Tuner).Context},
		{"../include/ncclbpf.h", Get(TunerChunkSize).Context},
		{"../include/ncclbpf_profiler.h", ProfilerContext},
	} {
		src, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		docs := headerFieldDocs(t, string(src), c.ctx.Name)
		inputs := 0
		for _, f := range c.ctx.Fields {
			if f.Access&Write != 0 {
				continue // outputs: decisions, not inputs
			}
			inputs++
			doc, ok := docs[f.Name]
			if !ok {
				t.Errorf("%s: %s.%s is not declared in the header", c.file, c.ctx.Name, f.Name)
				continue
			}
			uni := strings.Contains(doc, "[uniform")
			loc := strings.Contains(doc, "[local]")
			switch {
			case uni == loc:
				t.Errorf("%s: %s.%s: the comment must say exactly one of [uniform] or [local]:\n%s",
					c.file, c.ctx.Name, f.Name, doc)
			case uni != (f.Scope == RankUniform):
				t.Errorf("%s: %s.%s: the header says uniform=%v, the hook description says scope %d",
					c.file, c.ctx.Name, f.Name, uni, f.Scope)
			}
		}
		if inputs == 0 {
			t.Errorf("%s: no inputs checked", c.ctx.Name)
		}
	}
}
