package vm_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/internal/conformance"
	"github.com/ncclbpf/ncclbpf/jit/native"
	"github.com/ncclbpf/ncclbpf/vm"
)

// TestInterpDataFiles runs the interpreter's own edge cases, written as
// bpf_conformance .data files in testdata/interp (also runnable with
// `ncclbpf conformance --engine interp vm/testdata/interp`). Stricter than
// the conformance runner: an "-- error" section must be a substring of the
// interpreter's error.
func TestInterpDataFiles(t *testing.T) {
	files, err := filepath.Glob("testdata/interp/*.data")
	if err != nil || len(files) == 0 {
		t.Fatalf("no data files: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			tc, err := conformance.ParseFile(f)
			if err != nil {
				t.Fatal(err)
			}
			insns, err := tc.Program()
			if err == nil {
				var x vm.Executable
				x, err = vm.NewInterpreter().Compile(&vm.Program{Name: filepath.Base(f), Insns: insns, Helpers: conformance.Helpers()})
				if err == nil {
					defer x.Close()
					var got uint64
					got, err = x.Run(append([]byte(nil), tc.Mem...))
					if err == nil && !tc.HasError && got != tc.Result {
						t.Fatalf("r0 = %#x, want %#x", got, tc.Result)
					}
				}
			}
			switch {
			case tc.HasError && err == nil:
				t.Fatalf("ran without error, want %q", tc.Error)
			case tc.HasError && !strings.Contains(err.Error(), tc.Error):
				t.Fatalf("error %q does not contain %q", err, tc.Error)
			case !tc.HasError && err != nil:
				t.Fatal(err)
			}
		})
	}
}

// TestDataFilesOnJIT runs the same files on the JIT through the conformance
// runner (which runs natively only what the interpreter runs without
// fault): the results must agree.
func TestDataFilesOnJIT(t *testing.T) {
	results, err := conformance.RunDir(native.New(), "testdata/interp")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if !r.Passed {
			t.Error(r)
		}
	}
}
