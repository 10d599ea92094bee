package codesdoc

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/verifier"
)

var update = flag.Bool("update", false, "rewrite docs/error-codes.md")

const docPath = "../../docs/error-codes.md"

// render builds the reference: one section per code, in number order, from
// the constants of verifier/codes.go.
func render(t *testing.T) string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.Join("..", "..", "verifier", "codes.go"), nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString(`# Verifier error and warning codes

Generated from the verifier's code list (go test ./internal/codesdoc -update); do not edit.

When ` + "`ncclbpf verify`" + `, ` + "`ncclbpf run`" + `, a reload or the plugin refuses a program, the message
names the C source line, the instruction (pc) and one of the codes below. An error (E) rejects the
program; a warning (W) does not. Codes are stable: a code's number and name never change, and new
codes are added at the end. Match on the code, not on the message text. Examples are eBPF assembly in
the kernel's notation.

| Code | Kind |
|------|------|
`)
	type entry struct {
		code verifier.Code
		doc  string
	}
	var entries []entry
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		base := 0 // the block's "N + iota", or iota
		for i, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			if len(vs.Values) == 1 {
				if be, ok := vs.Values[0].(*ast.BinaryExpr); ok {
					if lit, ok := be.X.(*ast.BasicLit); ok {
						fmt.Sscan(lit.Value, &base)
					}
				}
			}
			for _, n := range vs.Names {
				if n.Name == "_" {
					continue
				}
				c := verifier.Code(base + i)
				if c.Name() == "unknown" || vs.Doc == nil {
					t.Fatalf("verifier/codes.go: %s (= %d) is no documented code", n.Name, base+i)
				}
				name, rest, found := strings.Cut(vs.Doc.Text(), ":")
				if !found || name != n.Name {
					t.Fatalf("verifier/codes.go: the comment of %s does not start with %q", n.Name, n.Name+":")
				}
				entries = append(entries, entry{code: c, doc: strings.TrimSpace(rest)})
			}
		}
	}
	if len(entries) == 0 {
		t.Fatal("verifier/codes.go: no codes found")
	}
	for _, e := range entries {
		kind := "error"
		if e.code.IsWarning() {
			kind = "warning"
		}
		fmt.Fprintf(&b, "| [%s](#%s) | %s |\n", e.code, anchor(e.code), kind)
	}
	for _, e := range entries {
		fmt.Fprintf(&b, "\n## %s\n\n", e.code)
		text, example, _ := strings.Cut(e.doc, "Example:\n")
		text = strings.TrimSpace(text)
		b.WriteString(strings.ToUpper(text[:1]) + text[1:] + "\n")
		if example = strings.TrimRight(example, "\n"); example != "" {
			b.WriteString("\nExample:\n\n```\n")
			for _, l := range strings.Split(example, "\n") {
				b.WriteString(strings.TrimPrefix(l, "\t") + "\n")
			}
			b.WriteString("```\n")
		}
	}
	return b.String()
}

// anchor is the GitHub anchor of a code's heading ("E012 null-deref" ->
// "e012-null-deref").
func anchor(c verifier.Code) string {
	return strings.ToLower(strings.ReplaceAll(c.String(), " ", "-"))
}

// TestErrorCodesDoc: docs/error-codes.md is the reference the code list
// renders, every code in it once.
func TestErrorCodesDoc(t *testing.T) {
	want := render(t)
	if *update {
		if err := os.WriteFile(docPath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatalf("%v (go test ./internal/codesdoc -update writes it)", err)
	}
	if string(got) != want {
		t.Errorf("docs/error-codes.md is not what the verifier's codes render: run go test ./internal/codesdoc -update")
	}
}
