package conformance_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/helpers"
	"github.com/ncclbpf/ncclbpf/internal/conformance"
	"github.com/ncclbpf/ncclbpf/jit/native"
	"github.com/ncclbpf/ncclbpf/vm"

	"github.com/ncclbpf/ncclbpf/internal/corpus"
)

// engines are the engines the whole corpus runs on. Adding an engine is one
// line here.
var engines = []func() vm.Engine{
	func() vm.Engine { return vm.NewInterpreter() },
	native.New,
}

func TestCorpus(t *testing.T) {
	dir := corpus.Dir(t, "../..")
	// Every file parses and its program assembles, whatever the engines.
	files, _ := filepath.Glob(filepath.Join(dir, "*.data"))
	if len(files) == 0 {
		t.Fatalf("CONFORMANCE CORPUS EMPTY: no .data files in %s", dir)
	}
	table := conformance.Helpers()
	for _, f := range files {
		tc, err := conformance.ParseFile(f)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		insns, err := tc.Program()
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		// Every helper the corpus calls by id is in the table.
		for pc, ins := range insns {
			if ins.Op == asm.OpCall && ins.Src == asm.PseudoHelper {
				if _, ok := table[vmID(ins.Imm)]; !ok {
					t.Errorf("%s: pc %d calls helper %d, which the conformance table lacks", f, pc, ins.Imm)
				}
			}
		}
	}
	for _, mk := range engines {
		e := mk()
		t.Run(e.Name(), func(t *testing.T) {
			results, err := conformance.RunDir(e, dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range results {
				if !r.Passed {
					t.Error(r.String())
				}
			}
			passed, failed := conformance.Summary(results)
			t.Logf("%s: %d passed, %d failed", e.Name(), passed, failed)
		})
	}
}

func TestParse(t *testing.T) {
	tc, err := conformance.Parse("x.data", []byte(`# Copyright
# SPDX-License-Identifier: MIT
-- c
#include <stdint.h>
-- asm
# a comment
mov %r0, %r2
exit
-- mem
00 01 # first
ff FE
-- no register offset
-- result
0x4
`))
	if err != nil {
		t.Fatal(err)
	}
	if tc.AsmLine != 6 || !strings.Contains(tc.Asm, "mov %r0, %r2") || strings.Contains(tc.Asm, "stdint") {
		t.Errorf("asm section: line %d, text %q", tc.AsmLine, tc.Asm)
	}
	if string(tc.Mem) != "\x00\x01\xff\xfe" {
		t.Errorf("mem = %x", tc.Mem)
	}
	if !tc.HasResult || tc.Result != 4 || tc.HasError {
		t.Errorf("result = %v %#x, error %v", tc.HasResult, tc.Result, tc.HasError)
	}

	tc, err = conformance.Parse("raw.data", []byte("-- asm\nexit\n-- raw\n0x0000000000000095\n0x00000001000000b7\n-- error\nboom\n"))
	if err != nil {
		t.Fatal(err)
	}
	insns, err := tc.Program()
	if err != nil || len(insns) != 2 || insns[1].Imm != 1 {
		t.Errorf("raw section takes precedence: %+v, %v", insns, err)
	}
	if !tc.HasError || tc.Error != "boom" {
		t.Errorf("error section: %v %q", tc.HasError, tc.Error)
	}

	for _, bad := range []struct{ src, msg string }{
		{"-- result\n0x1\n", "no program"},
		{"-- asm\nexit\n", "no expectation"},
		{"-- asm\nexit\n-- result\nzz\n", `bad.data:4: result section: "zz"`},
		{"-- asm\nexit\n-- result\n1\n2\n", "want one value"},
		{"-- asm\nexit\n-- mem\n0g\n-- result\n1\n", `bad.data:4: mem section: "0g"`},
		{"-- raw\n0xq\n-- result\n1\n", `bad.data:2: raw section`},
		{"-- asm\nexit\n-- asm\nexit\n-- result\n1\n", "appears twice"},
	} {
		_, err := conformance.Parse("bad.data", []byte(bad.src))
		var pe *conformance.ParseError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), bad.msg) {
			t.Errorf("Parse(%q) error %v, want a *ParseError with %q", bad.src, err, bad.msg)
		}
	}
}

// Assembler errors are reported with the line number of the .data file.
func TestAssembleErrorLine(t *testing.T) {
	tc, err := conformance.Parse("f.data", []byte("# header\n-- asm\nmov %r0, 1\nbogus %r0\nexit\n-- result\n1\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = tc.Program()
	if err == nil || !strings.Contains(err.Error(), "line 4:") || !strings.Contains(err.Error(), "bogus") {
		t.Fatalf("Program() error %v, want line 4 and the bad mnemonic", err)
	}
}

// fakeEngine lets the runner's logic be tested without a real engine: it
// returns r0 = the first instruction's Imm, or fails at the stage asked.
type fakeEngine struct {
	compileErr, runErr error
	panicMsg           string
	sawHelper          bool
	sawMem             []byte
	ran                bool
}

func (f *fakeEngine) Name() string { return "fake" }

func (f *fakeEngine) Compile(p *vm.Program) (vm.Executable, error) {
	if f.panicMsg != "" {
		panic(f.panicMsg)
	}
	if f.compileErr != nil {
		return nil, f.compileErr
	}
	h, ok := p.Helpers[5]
	f.sawHelper = ok && h.Addr != 0 && h.UnwindOnZero
	return &fakeExec{f: f, r0: uint64(int64(p.Insns[0].Imm))}, nil
}

type fakeExec struct {
	f  *fakeEngine
	r0 uint64
}

func (x *fakeExec) Run(mem []byte) (uint64, error) {
	x.f.sawMem, x.f.ran = mem, true
	if len(mem) > 0 {
		mem[0] = 0xee // must not reach the test's own copy
	}
	return x.r0, x.f.runErr
}

func (x *fakeExec) Close() error { return nil }

func TestRun(t *testing.T) {
	parse := func(src string) *conformance.Test {
		tc, err := conformance.Parse("t.data", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		return tc
	}
	ok := parse("-- asm\nmov %r0, 7\nexit\n-- mem\n01 02\n-- result\n0x7\n")
	bad := parse("-- asm\nmov %r0, 2\nexit\n-- result\n0x1\n")
	wantErr := parse("-- asm\nmov %r0, 2\nexit\n-- error\ndivision by zero\n")
	badAsm := parse("-- asm\nmov %r0\nexit\n-- result\n0x1\n")

	f := &fakeEngine{}
	if r := conformance.Run(f, ok); !r.Passed || r.Detail != "" || r.Got != 7 {
		t.Errorf("passing test: %+v", r)
	}
	if !f.sawHelper {
		t.Error("engine did not get the unwind helper (id 5, native address, UnwindOnZero)")
	}
	if string(f.sawMem) != "\xee\x02" || ok.Mem[0] != 0x01 {
		t.Errorf("mem: engine saw %x, test keeps %x (want a copy)", f.sawMem, ok.Mem)
	}
	if r := conformance.Run(f, bad); r.Passed || r.Detail != "r0 = 0x2, want 0x1" {
		t.Errorf("wrong r0: %+v", r)
	}
	if r := conformance.Run(f, wantErr); r.Passed || !strings.Contains(r.Detail, "want an error (division by zero)") {
		t.Errorf("missing expected error: %+v", r)
	}
	if r := conformance.Run(f, badAsm); r.Passed || !strings.Contains(r.Detail, "assemble") || !strings.Contains(r.Detail, "line 2") {
		t.Errorf("assembler error: %+v", r)
	}
	boom := errors.New("boom")
	for _, f := range []*fakeEngine{{compileErr: boom}, {runErr: boom}} {
		r := conformance.Run(f, ok)
		if r.Passed || !errors.Is(r.Err, boom) || !strings.Contains(r.Detail, "(fake): boom") {
			t.Errorf("engine error: %+v", r)
		}
		if r := conformance.Run(f, wantErr); !r.Passed || !errors.Is(r.Err, boom) {
			t.Errorf("expected error: %+v", r)
		}
	}
	r := conformance.Run(&fakeEngine{panicMsg: "oops"}, wantErr)
	if r.Passed || r.Detail != "engine fake panicked: oops" {
		t.Errorf("panic: %+v", r)
	}
}

func TestRunDir(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("b.data", "-- asm\nmov %r0, 1\nexit\n-- result\n1\n")
	write("a.data", "-- asm\nmov %r0, 2\nexit\n-- result\n1\n")
	write("sub/c.data", "-- asm\nexit\n")
	write("sub/d.data", "-- asm\nexit\n-- result\n0xx\n")
	write("notes.txt", "not a test")
	results, err := conformance.RunDir(&fakeEngine{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range results {
		got = append(got, r.String())
	}
	want := []string{
		"FAIL " + filepath.Join(dir, "a.data") + ": r0 = 0x2, want 0x1",
		"PASS " + filepath.Join(dir, "b.data"),
		"FAIL " + filepath.Join(dir, "sub/c.data") + ": parse: no expectation: want a \"-- result\" or \"-- error\" section",
		"FAIL " + filepath.Join(dir, "sub/d.data") + ": parse: line 4: result section: \"0xx\" is not a 64-bit hex value",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("RunDir:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if p, f := conformance.Summary(results); p != 1 || f != 3 {
		t.Errorf("Summary = %d, %d", p, f)
	}
	// A single file may be named too.
	if results, err := conformance.RunDir(&fakeEngine{}, filepath.Join(dir, "b.data")); err != nil || len(results) != 1 || !results[0].Passed {
		t.Errorf("RunDir(file) = %v, %v", results, err)
	}
	if _, err := conformance.RunDir(&fakeEngine{}, filepath.Join(dir, "missing")); err == nil {
		t.Error("RunDir(missing folder) succeeded")
	}
	if _, err := conformance.RunDir(&fakeEngine{}, t.TempDir()); err == nil || !strings.Contains(err.Error(), "no .data files") {
		t.Errorf("RunDir(empty folder) error %v", err)
	}
}

type helpersID = helpers.ID

func vmID(imm int32) helpersID { return helpersID(imm) }

// uBPF's conventions: sections included from files, an error and a result
// in one file (the error wins), assembler-only tests.
func TestUBPFConventions(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "prog.asm"), []byte("mov %r0, 3\nexit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pkt.hex"), []byte("01 02\n03\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tc, err := conformance.Parse(filepath.Join(dir, "x.data"), []byte("-- asm @ prog.asm\n-- mem @ pkt.hex\n-- result\n3\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tc.Asm, "mov %r0, 3") || string(tc.Mem) != "\x01\x02\x03" {
		t.Errorf("included sections: asm %q, mem %x", tc.Asm, tc.Mem)
	}
	if _, err := conformance.Parse(filepath.Join(dir, "y.data"), []byte("-- asm @ nope.asm\n-- result\n3\n")); err == nil || !strings.Contains(err.Error(), "nope.asm") {
		t.Errorf("missing include: %v", err)
	}

	both, err := conformance.Parse("both.data", []byte("-- asm\nmov %r0, 5\nexit\n-- error pattern\nout of bounds\n-- result\n0xffffffffffffffff\n-- no jit\nreason\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !both.HasError || both.Error != "out of bounds" {
		t.Errorf("error pattern: %v %q", both.HasError, both.Error)
	}
	if r := conformance.Run(&fakeEngine{}, both); r.Passed || !strings.Contains(r.Detail, "want an error (out of bounds)") {
		t.Errorf("error wins over result: %+v", r)
	}

	for _, tc := range []struct {
		src    string
		passed bool
		detail string
	}{
		{"-- asm\nmov32 %r0, 1\nexit\n-- raw\n0x00000001000000b4\n0x0000000000000095\n", true, ""},
		{"-- asm\nmov32 %r0, 2\nexit\n-- raw\n0x00000001000000b4\n0x0000000000000095\n", false, "slot 0 assembles to 0x00000002000000b4, raw section has 0x00000001000000b4"},
		{"-- asm\nmov32 %r0, 1\n-- raw\n0x00000001000000b4\n0x0000000000000095\n", false, "assembly has 1 slots, raw section 2"},
	} {
		asmTest, err := conformance.Parse("asm.data", []byte(tc.src))
		if err != nil {
			t.Fatal(err)
		}
		if !asmTest.AsmOnly {
			t.Errorf("%q: not an assembler test", tc.src)
		}
		f := &fakeEngine{panicMsg: "the engine must not be used"}
		if r := conformance.Run(f, asmTest); r.Passed != tc.passed || r.Detail != tc.detail {
			t.Errorf("%q: %+v, want passed=%v detail %q", tc.src, r, tc.passed, tc.detail)
		}
	}
}

// nativeFake is a fakeEngine whose executables claim to be native code.
type nativeFake struct{ fakeEngine }

type nativeExec struct{ *fakeExec }

func (nativeExec) Entry() uintptr { return 0 }

func (f *nativeFake) Compile(p *vm.Program) (vm.Executable, error) {
	x, err := f.fakeEngine.Compile(p)
	if err != nil {
		return nil, err
	}
	return nativeExec{x.(*fakeExec)}, nil
}

// A program that faults on the reference interpreter is never run as
// native code, where it could crash the process.
func TestNativeRunsOnlyWhatInterpreterRuns(t *testing.T) {
	faulty := "-- asm\nmov %r6, 0\nldxb %r0, [%r6-1]\nexit\n"
	for _, tc := range []struct {
		src    string
		passed bool
	}{
		{faulty + "-- result\n0x0\n", false},
		{faulty + "-- error\naddress underflow\n", true},
	} {
		test, err := conformance.Parse("fault.data", []byte(tc.src))
		if err != nil {
			t.Fatal(err)
		}
		f := &nativeFake{}
		r := conformance.Run(f, test)
		if r.Passed != tc.passed || f.ran {
			t.Errorf("%q: passed %v (want %v), native Run called: %v", tc.src, r.Passed, tc.passed, f.ran)
		}
		if !tc.passed && !strings.Contains(r.Detail, "not run on fake: the reference interpreter rejects it or faults") {
			t.Errorf("detail %q", r.Detail)
		}
	}
	ok, _ := conformance.Parse("ok.data", []byte("-- asm\nmov %r0, 3\nexit\n-- result\n3\n"))
	f := &nativeFake{}
	if r := conformance.Run(f, ok); !r.Passed || !f.ran {
		t.Errorf("a program that runs on the interpreter must run natively: %+v", r)
	}
}

// A failure with a detail of several lines reads as one indented block.
func TestResultStringMultiline(t *testing.T) {
	r := conformance.Result{Name: "x.data", Detail: "assemble: line 2: bad\nline 3: worse\n"}
	if got, want := r.String(), "FAIL x.data: assemble: line 2: bad\n    line 3: worse"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
