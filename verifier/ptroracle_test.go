package verifier_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/maps"
)

// The pointer oracle must be able to fail. Each program below is unsafe
// in the way a verifier hole of one class would let through; it bypasses
// the verifier and goes straight to the oracle (interpreter with shadow,
// and the address comparison), which must report it with the expected
// kind and message. Mutations checked by hand: without the shadow's
// bounds check (sobj start/end in shadow.check) class1_distance_between_values
// and subprog_frame_escape pass unnoticed; without the A/B comparison
// class2_branch_on_address and leak_address_as_number do; without the
// 64-bit return check class7_wide_return does; without the JIT comparison
// TestPtrOracleJITDiffers fails.
var ptrOracleCases = []struct {
	name, src string
	kind      string // expected failure kind
	want      string // a part of the expected message
}{
	// 1. pointer arithmetic across objects: the distance between two
	// looked-up values added to the first reaches the second, memory the
	// interpreter knows (both were looked up), not the pointer's object.
	{"class1_distance_between_values", "mov %r6, %r1\n" + lookup("0", 1, "r7") + lookup("0", 2, "r8") + `
mov %r5, %r8
sub %r5, %r7
mov %r3, %r7
add %r3, %r5
ldxb %r0, [%r3+0]
mov %r0, 0
exit`, "shadow", "outside the object the pointer came from"},
	// 2. pointer comparisons: a branch on where the context is
	{"class2_branch_on_address", `
mov %r2, %r1
and %r2, 8
jeq %r2, 0, a
mov %r0, 1
exit
a:
mov %r0, 0
exit`, "address", "depends on where objects are"},
	// 2. a loop on pointer wraparound believed finite
	{"class2_loop_never_ends", `
mov %r3, %r10
l:
add %r3, 8
jne %r3, 0, l
mov %r0, 0
exit`, "trap", "does not end"},
	// 3. an offset whose bound was forgotten (pruning): unbounded access
	{"class3_unbounded_offset", "mov %r6, %r1\n" + lookup("0", 1, "r7") + `
ldxdw %r2, [%r6+8]
add %r7, %r2
ldxb %r0, [%r7+0]
mov %r0, 0
exit`, "", "outside"},
	// 4. references: a record written after its submission
	{"class4_write_after_submit", reserve("r7", 16) + reserve("r8", 16) + `
mov %r1, %r7
mov %r2, 0
call 132
stb [%r7+0], 1
mov %r1, %r8
mov %r2, 0
call 132
mov %r0, 0
exit`, "", "released"},
	{"class4_double_submit", reserve("r7", 16) + `
mov %r1, %r7
mov %r2, 0
call 132
mov %r1, %r7
mov %r2, 0
call 133
mov %r0, 0
exit`, "shadow", "not the start of a live ringbuf record"},
	{"class4_record_leaked", reserve("r7", 16) + `
mov %r0, 0
exit`, "shadow", "still reserved at exit"},
	{"class4_moved_record_submitted", reserve("r7", 16) + `
mov %r1, %r7
add %r1, 8
mov %r2, 0
call 132
mov %r0, 0
exit`, "shadow", "not the start of a live ringbuf record"},
	// 5. map access flags
	{"class5_store_to_readonly_map", lookup("3", 0, "r7") + `
stb [%r7+0], 1
mov %r0, 0
exit`, "", "read-only"},
	// 6. arguments a helper reads: an unset printk argument, a pointer
	{"class6_printk_uninit_arg", printkFmt("%d") + `
call 6
mov %r0, 0
exit`, "shadow", "reads r3, which is not initialized"},
	{"class6_printk_uninit_arg_format_in_map", lookup("0", 1, "r7") + `
lddw %r1, 0x0a64252064252070
stxdw [%r7+0], %r1
stb [%r7+8], 0
mov %r1, %r7
mov %r2, 9
mov %r3, 1
call 6
mov %r0, 0
exit`, "shadow", "reads r4, which is not initialized"},
	{"class6_printk_pointer_arg", printkFmt("%d") + `
mov %r3, %r10
call 6
mov %r0, 0
exit`, "shadow", "argument 3 of bpf_trace_printk is a pointer"},
	// 7. return value: hosts read the C int in the low 32 bits of r0
	// (hook.Range.Result); high bits are ignored, the low half must be
	// in range
	{"class7_return_low_half_out_of_range", `
lddw %r0, 0x100000100
exit`, "return", "outside [0, 255]"},
	// pointers leaving the program
	{"leak_pointer_into_map", lookup("0", 1, "r7") + `
stxdw [%r7+0], %r10
mov %r0, 0
exit`, "shadow", "leaves the program"},
	{"leak_address_as_number", "mov %r6, %r1\n" + lookup("0", 1, "r7") + `
mov %r2, %r6
rsh %r2, 3
stxdw [%r7+0], %r2
mov %r0, 0
exit`, "address", "map arr value 1"},
	{"leak_pointer_return", `
mov %r0, %r10
exit`, "shadow", "returns a pointer"},
	{"leak_pointer_in_map_update_value", `
stxdw [%r10-48], %r1
stdw [%r10-40], 0
stdw [%r10-32], 0
stdw [%r10-24], 0
stdw [%r10-16], 0
stdw [%r10-8], 0
stw [%r10-52], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -52
mov %r3, %r10
add %r3, -48
mov %r4, 0
call 2
mov %r0, 0
exit`, "shadow", "reads part of a spilled pointer"},
	// spills, fills and partial overwrites
	{"stack_uninit_read", `
ldxdw %r0, [%r10-8]
and %r0, 255
exit`, "shadow", "never written"},
	{"spill_partial_pointer_read", `
stxdw [%r10-8], %r1
ldxw %r0, [%r10-8]
and %r0, 255
exit`, "shadow", "part of a spilled pointer"},
	{"spill_overwritten_then_used", lookup("0", 1, "r7") + `
stxdw [%r10-8], %r7
stb [%r10-8], 0x40
ldxdw %r3, [%r10-8]
ldxb %r0, [%r3+0]
mov %r0, 0
exit`, "", "through a number"},
	{"register_uninit_read", `
mov %r0, %r5
and %r0, 255
exit`, "shadow", "reads r5, which is not initialized"},
	{"register_after_helper_call", `
mov %r1, 5
call 5
mov %r0, %r1
and %r0, 255
exit`, "shadow", "reads r1, which is not initialized"},
	// subprograms: a pointer to a returned frame, a pointer out of the
	// callee's frame into the caller's
	{"subprog_dangling_frame", `
call local f
ldxdw %r0, [%r0+0]
and %r0, 255
exit
f:
stdw [%r10-8], 1
mov %r0, %r10
add %r0, -8
exit`, "shadow", "own stack frame"},
	{"subprog_dangling_frame_via_caller_stack", `
mov %r1, %r10
add %r1, -16
call local f
ldxdw %r2, [%r10-16]
ldxb %r0, [%r2-8]
exit
f:
stdw [%r10-8], 1
stxdw [%r1+0], %r10
mov %r0, 0
exit`, "shadow", "released"},
	{"subprog_frame_escape", `
stdw [%r10-8], 1
call local f
exit
f:
ldxdw %r0, [%r10+8]
and %r0, 255
exit`, "shadow", "outside the object"},
	// a pointer made of numbers
	{"pointer_from_number", `
mov %r2, %r10
rsh %r2, 1
lsh %r2, 1
stdw [%r2-8], 1
mov %r0, 0
exit`, "shadow", "through a number"},
}

// lookup looks key up in map m (index as text) and leaves the value,
// null-checked, in reg.
func lookup(m string, key int, reg string) string {
	return `
stw [%r10-72], ` + strconv.Itoa(key) + `
lddw %r1, map(` + m + `)
mov %r2, %r10
add %r2, -72
call 1
jne %r0, 0, +2
mov %r0, 0
exit
mov %` + reg + `, %r0
`
}

func reserve(reg string, size int) string {
	return `
lddw %r1, map(2)
mov %r2, ` + strconv.Itoa(size) + `
mov %r3, 0
call 131
jne %r0, 0, +2
mov %r0, 0
exit
mov %` + reg + `, %r0
`
}

// printkFmt puts format f (at most 7 bytes) on the stack and r1, r2.
func printkFmt(f string) string {
	var v uint64
	for i := len(f) - 1; i >= 0; i-- {
		v = v<<8 | uint64(f[i])
	}
	return `
lddw %r1, ` + fmt.Sprintf("%#x", v) + `
stxdw [%r10-8], %r1
mov %r1, %r10
add %r1, -8
mov %r2, 8
`
}

func TestPtrOracleCatches(t *testing.T) {
	maps.CapturePrintk(true)
	defer maps.CapturePrintk(false)
	defer maps.DrainPrintk()
	// runs are compared line for line: no line may be dropped by the
	// process-wide rate limit
	maps.SetPrintkRate(0, 0)
	defer maps.SetPrintkRate(20, 40)
	c, err := newPtrChecker(false)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	for _, tc := range ptrOracleCases {
		insns, err := asm.Assemble(tc.src)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		f, err := c.check(tc.name, insns, rand.New(rand.NewPCG(3, 4)), 8)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		switch {
		case f == nil:
			t.Errorf("%s: the oracle finds nothing wrong with\n%s", tc.name, numbered(tc.src))
		case tc.kind != "" && f.kind != tc.kind || !strings.Contains(f.msg, tc.want):
			t.Errorf("%s: got %s: %s\nwant %s: ...%s...", tc.name, f.kind, f.msg, tc.kind, tc.want)
		}
		if err := c.renew(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPtrOracleJITDiffers: with the shadow rules off, a program that
// reads r1 after a helper call (the interpreter keeps it, the JIT's
// native helper clobbers it) is caught by the interpreter/JIT comparison.
func TestPtrOracleJITDiffers(t *testing.T) {
	c, err := newPtrChecker(true)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	c.noShadow = true
	insns, err := asm.Assemble("mov %r1, 0x5a5a\ncall 5\nmov %r0, %r1\nand %r0, 255\nexit\n")
	if err != nil {
		t.Fatal(err)
	}
	f, err := c.check("clobbered", insns, rand.New(rand.NewPCG(5, 6)), 4)
	if err != nil {
		t.Fatal(err)
	}
	if f == nil || f.kind != "jit" {
		t.Errorf("the JIT comparison does not catch a read of a clobbered register: %v", f)
	}
}

// TestPtrOracleCrash: a worker that crashes on the JIT is reported as a
// failure of the program it announced, and the parent goes on.
func TestPtrOracleCrash(t *testing.T) {
	_, fails := runPtrWorkers(t, 0, 8, "NCCLBPF_PTRGEN_CRASHTEST=1")
	if len(fails) != 1 || fails[0].index != 7 || fails[0].kind != "crash" {
		t.Fatalf("want one crash of program 7, got %+v", fails)
	}
}

// TestPtrOracleCorpus runs the oracle on the accepted programs of the
// assembly corpus (hand-written, safe by review): a failure here is a
// false alarm of the oracle or a hole in the verifier.
func TestPtrOracleCorpus(t *testing.T) {
	maps.CapturePrintk(true)
	defer maps.CapturePrintk(false)
	defer maps.DrainPrintk()
	// runs are compared line for line: no line may be dropped by the
	// process-wide rate limit
	maps.SetPrintkRate(0, 0)
	defer maps.SetPrintkRate(20, 40)
	c, err := newPtrChecker(false)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	files, _ := filepath.Glob("../testdata/verifier/asm/*.s")
	ran := 0
	for _, file := range files {
		for _, p := range parseAsmCorpus(t, file) {
			if p.hook != "vtest" || p.maxStack != 0 || p.maxInsns != 0 {
				continue
			}
			insns, ve, err := verifyPtr(p.src)
			if err != nil || ve != nil {
				continue
			}
			f, err := c.check(p.name, insns, rand.New(rand.NewPCG(7, 8)), 8)
			if err != nil {
				t.Fatal(err)
			}
			if f != nil {
				t.Errorf("%s:%d: %s (accepted): %v", filepath.Base(file), p.line, p.name, f)
				if err := c.renew(); err != nil {
					t.Fatal(err)
				}
			}
			ran++
		}
	}
	if ran < 10 {
		t.Errorf("only %d corpus programs ran", ran)
	}
	t.Logf("%d accepted corpus programs checked", ran)
}

// TestPtrOracleRandomPrograms runs the pointer oracle (interpreter, shadow,
// address comparison) on the accepted programs of the older random
// generator (gen_test.go: context fields, variable stack offsets, loops,
// subprograms), which it has never been tuned to: a failure is a hole in
// the verifier or a false alarm of the oracle.
func TestPtrOracleRandomPrograms(t *testing.T) {
	maps.CapturePrintk(true)
	defer maps.CapturePrintk(false)
	defer maps.DrainPrintk()
	// runs are compared line for line: no line may be dropped by the
	// process-wide rate limit
	maps.SetPrintkRate(0, 0)
	defer maps.SetPrintkRate(20, 40)
	c, err := newPtrChecker(false)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	rng := rand.New(rand.NewPCG(7, 11))
	n, accepted := 1500, 0
	if testing.Short() {
		n = 300
	}
	for i := 0; i < n; i++ {
		src := genProgram(rng)
		insns, ve, err := verifyPtr(src)
		if err != nil {
			t.Fatal(err)
		}
		if ve != nil {
			continue
		}
		accepted++
		f, err := c.check(fmt.Sprint("gen", i), insns, rand.New(rand.NewPCG(1, uint64(i))), 8)
		if err != nil {
			t.Fatal(err)
		}
		if f != nil {
			t.Errorf("accepted program %d: %v\n%s", i, f, numbered(src))
			if err := c.renew(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if accepted < n/10 {
		t.Errorf("only %d of %d programs accepted", accepted, n)
	}
}
