package verifier_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/hook"
	"github.com/ncclbpf/ncclbpf/loader"
	"github.com/ncclbpf/ncclbpf/verifier"
)

func verifyFile(t *testing.T, path string) map[string]error {
	t.Helper()
	c, err := loader.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	hooks := make([]*hook.Hook, len(c.Programs))
	for i, p := range c.Programs {
		hooks[i], _ = hook.ForSection(p.Section) // nil: left out
	}
	_, errs, _ := verifier.VerifyCollection(c, hooks)
	out := map[string]error{}
	for i, p := range c.Programs {
		out[p.Name] = errs[i]
	}
	return out
}

// TestWrongContext: a program that declares another hook's context, or an
// ncclbpf_ struct no hook passes, is refused, naming both structs.
func TestWrongContext(t *testing.T) {
	errs := verifyFile(t, "../testdata/loader/wrong_ctx.o")
	for name, want := range map[string]string{
		"profiler_ctx_in_tuner": "E037 wrong-context: the program's parameter is struct ncclbpf_prof_ctx *, but hook tuner passes " +
			"struct ncclbpf_tuner_ctx *: declare it struct ncclbpf_tuner_ctx *ctx, or put the program in a section whose hook " +
			"passes struct ncclbpf_prof_ctx (profiler/",
		"misspelt_ctx": "E037 wrong-context: the program's parameter is struct ncclbpf_profiler_ctx *, which no hook passes; " +
			"hook tuner passes struct ncclbpf_tuner_ctx *",
	} {
		var ve *verifier.Error
		if err := errs[name]; !errors.As(err, &ve) || ve.Code != verifier.WrongContext || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v\nwant: %s", name, err, want)
		}
	}
	if err := errs["right_ctx"]; err != nil {
		t.Errorf("right_ctx: %v", err)
	}
	// A struct of the program's own (struct ctx) is left to the field checks.
	for name, err := range verifyFile(t, "../testdata/loader/policy.o") {
		var ve *verifier.Error
		if errors.As(err, &ve) && ve.Code == verifier.WrongContext {
			t.Errorf("policy.o %s: %v", name, err)
		}
	}
}

// TestNoSourceHint: a rejection of a program built without -g says how to
// get source lines; one built with -g has its line and no hint.
func TestNoSourceHint(t *testing.T) {
	err := verifyFile(t, "../testdata/loader/nodebug_unsafe.o")["deref_scalar"]
	var ve *verifier.Error
	if !errors.As(err, &ve) || ve.Line != 0 || ve.Hint != loader.NoDebugInfoHint ||
		!strings.Contains(ve.Explain(), "no source line: it was built without -g; rebuild it with -g: clang-19 ") ||
		!strings.Contains(ve.Error(), "rebuild it with -g") {
		t.Fatalf("no -g: %#v", err)
	}
	for name, err := range verifyFile(t, "../testdata/loader/wrong_ctx.o") {
		if errors.As(err, &ve) && (ve.Hint != "" || ve.Line == 0) {
			t.Errorf("%s built with -g: line %d, hint %q", name, ve.Line, ve.Hint)
		}
	}
}
