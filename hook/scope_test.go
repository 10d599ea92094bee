package hook

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// headerFieldDocs returns, for struct name in the C header text src, each
// member's declaration line (marks included) together with its comment
// (the lines up to the next member), keyed by member name.
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
	decl := regexp.MustCompile(`^\s*(?:__ncclbpf_\w+\s+)*(?:__[us](?:8|16|32|64))\s+(\w+)\s*(?:\[[^\]]*\])*\s*;`)
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

// TestHeaderMarksRankScope reads the marks of every member of every hook
// context from the headers' text (a second reading, independent of the
// BTF that zz_contexts.go is generated from) and checks that each member
// says exactly one of __ncclbpf_uniform or __ncclbpf_local, that only the
// writable fields say __ncclbpf_out, and that the hook descriptions agree;
// and that the offset each member's comment starts with is its offset.
func TestHeaderMarksRankScope(t *testing.T) {
	for _, c := range []struct {
		file string
		ctx  Context
	}{
		{"../include/ncclbpf.h", Get(Tuner).Context},
		{"../include/ncclbpf.h", Get(TunerChunkSize).Context},
		{"../include/ncclbpf_profiler.h", ProfilerContext},
		{"../include/ncclbpf_net.h", NetContext},
	} {
		src, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		docs := headerFieldDocs(t, string(src), c.ctx.Name)
		if len(docs) != len(c.ctx.Fields) {
			t.Errorf("%s: struct %s declares %d members, the hook description has %d fields", c.file, c.ctx.Name,
				len(docs), len(c.ctx.Fields))
		}
		for _, f := range c.ctx.Fields {
			doc, ok := docs[f.Name]
			if !ok {
				t.Errorf("%s: %s.%s is not declared in the header", c.file, c.ctx.Name, f.Name)
				continue
			}
			decl := doc
			if loc := regexp.MustCompile(`\b` + f.Name + `\s*[\[;]`).FindStringIndex(doc); loc != nil {
				decl = doc[:loc[0]]
			}
			uni := strings.Contains(decl, "__ncclbpf_uniform")
			loc := strings.Contains(decl, "__ncclbpf_local")
			out := strings.Contains(decl, "__ncclbpf_out")
			switch {
			case uni == loc:
				t.Errorf("%s: %s.%s: the declaration must say exactly one of __ncclbpf_uniform or __ncclbpf_local:\n%s",
					c.file, c.ctx.Name, f.Name, doc)
			case uni != (f.Scope == RankUniform):
				t.Errorf("%s: %s.%s: the header says uniform=%v, the hook description says scope %d",
					c.file, c.ctx.Name, f.Name, uni, f.Scope)
			}
			if out != (f.Access&Write != 0) {
				t.Errorf("%s: %s.%s: the header says out=%v, the hook description access %d", c.file, c.ctx.Name, f.Name,
					out, f.Access)
			}
			// The offset the comment starts with (a reader's aid) is the generated one.
			if m := regexp.MustCompile(`/\*\s*(\d+)`).FindStringSubmatch(doc); m == nil || m[1] != strconv.Itoa(f.Offset) {
				t.Errorf("%s: %s.%s: the comment should start with its offset %d:\n%s", c.file, c.ctx.Name, f.Name, f.Offset, doc)
			}
			if strings.Contains(doc, "[uniform]") || strings.Contains(doc, "[local]") {
				t.Errorf("%s: %s.%s: a [uniform]/[local] mark in a comment: the macro is the mark", c.file, c.ctx.Name, f.Name)
			}
		}
	}
}
