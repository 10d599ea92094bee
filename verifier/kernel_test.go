//go:build linux

package verifier_test

import (
	"errors"
	"fmt"
	"github.com/ncclbpf/ncclbpf/loader"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/helpers"
	"github.com/ncclbpf/ncclbpf/hook"
	"github.com/ncclbpf/ncclbpf/internal/kernelbpf"
	"github.com/ncclbpf/ncclbpf/verifier"
)

// Linux's verifier as a second opinion. Every program of the assembly
// corpora (testdata/verifier/asm, testdata/verifier/redteam) that makes
// sense as a Linux kprobe program is loaded into the running kernel with
// BPF_PROG_LOAD (never attached, never run), and the kernel's verdict is
// compared with ncclbpf's. Every disagreement must be one of
// kernelDifferences (kernel_known_test.go), each with its reason; a new
// one fails the test with both verifiers' messages.
//
// The program type is BPF_PROG_TYPE_KPROBE because its context, struct
// pt_regs, is 168 read-only bytes that a program may read at any aligned
// offset and width, each read an unknown number of its width: vtest_ctx's
// readable fields read the same way in both verifiers. A program fits when
// it is written for the vtest hook with the default limits and uses its
// context only through such reads, moves, spills, comparisons and its
// return (kernelFit). Every ncclbpf helper is a base helper a privileged
// kprobe program may call, and the corpora's maps are created with the
// same type, sizes, entries and flags (read-only maps with known contents
// are filled and frozen, so Linux knows their contents as ncclbpf does).
//
// ncclbpf verifies each program under vtest's context and helpers but
// with any return value allowed, the kprobe contract; the count of bad_
// programs that the wider range lets through is logged (TestCorpusAsm and
// TestRedteamAsm check them with vtest's range).
//
// Linux is asked twice (kernelModes): under its privileged rules (root
// with CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN) as kprobe programs, and
// under the rules of a loader holding CAP_BPF alone, as socket filters
// (kprobes need CAP_PERFMON), on a thread that dropped the other two
// capabilities. Where bpf(2) is not permitted the test skips, naming the
// reason; NCCLBPF_KERNEL_VERIFIER=require makes that a failure
// (scripts/test-long.sh sets it).

// kernelHook is vtest with the return contract of a kprobe program.
var kernelHook = &hook.Hook{
	Name:    "vtest_sockfilter",
	Context: testHook.Context,
	Helpers: testHook.Helpers,
	Return:  hook.Range{Min: math.MinInt64, Max: math.MaxInt64},
	Doc:     "verifier tests: vtest with any return value, as a Linux kprobe program",
}

// kernelProgram is one corpus program on its way to both verifiers.
type kernelProgram struct {
	key   string // "file.s:name", the key of kernelDifferences
	where string // "file.s:line: name"
	prog  *asmProgram
	insns []asm.Instruction
	maps  []*loader.MapSpec
	fds   []int // the kernel's maps, by index
}

// ctxFitReads are the context reads a kprobe program shares with vtest:
// the readable fields of vtest_ctx, at their offsets and widths. pt_regs
// is larger than vtest_ctx and read-only, so each is an unknown number of
// the field's width for both verifiers.
var ctxFitReads = map[int16]int{0: 4, 4: 4, 8: 8, 16: 4, 32: 4, 36: 4, 40: 4, 44: 4, 48: 4, 52: 4, 56: 4, 60: 4, 64: 2, 68: 4}

// fitState is what kernelFit knows before an instruction: which
// registers and which 8-byte stack slots of the current frame may hold
// the context pointer, and whether the code is a subprogram's.
type fitState struct {
	regs  uint16
	slots uint64 // bit i: the slot at r10-8*(i+1)
	sub   bool
}

// kernelFit returns why insns do not fit a Linux kprobe program, or ""
// when they do. It follows every copy of the context pointer (r1 at
// entry) on every path, forward to a fixed point, through registers,
// 8-byte spills to the stack below r10 and subprogram arguments. A copy
// may be moved, spilled, filled, compared, returned by the entry program
// (a pointer leak, whatever the hook) and read as one of the readable
// vtest_ctx fields; any other use (arithmetic, a store through it, a
// store of it elsewhere than the stack, a helper argument, a subprogram's
// return value, a read of another field) depends on vtest's context.
func kernelFit(insns []asm.Instruction, reads map[int16]int, printk bool) string {
	n := len(insns)
	in := make([]fitState, n)
	seen := make([]bool, n)
	var work []int
	flow := func(pc int, s fitState) {
		if pc < 0 || pc >= n {
			return
		}
		old := in[pc]
		merged := fitState{old.regs | s.regs, old.slots | s.slots, old.sub || s.sub}
		if seen[pc] && merged == old {
			return
		}
		seen[pc], in[pc] = true, merged
		work = append(work, pc)
	}
	// slotsOf returns the slots that bytes [r10+off, r10+off+size) touch.
	slotsOf := func(off int16, size int) uint64 {
		var m uint64
		for b := int(off); b < int(off)+size; b++ {
			if b < 0 && b >= -512 {
				m |= 1 << ((-b - 1) / 8)
			}
		}
		return m
	}
	flow(0, fitState{regs: 1 << asm.R1})
	for len(work) > 0 {
		pc := work[len(work)-1]
		work = work[:len(work)-1]
		ins, s := insns[pc], in[pc]
		has := func(r asm.Register) bool { return r < 16 && s.regs&(1<<r) != 0 }
		set := func(r asm.Register, ctx bool) {
			if r >= 16 {
				return
			}
			s.regs &^= 1 << r
			if ctx {
				s.regs |= 1 << r
			}
		}
		next := pc + 1
		cls := ins.Op.Class()
		switch {
		case cls.IsALU():
			if cls == asm.ClassALU64 && ins.Op.ALUOp() == asm.ALUMov && ins.Op.Source() == asm.SourceX && ins.Off == 0 {
				set(ins.Dst, has(ins.Src))
				break
			}
			if (ins.Op.ALUOp() != asm.ALUMov && has(ins.Dst)) || (ins.Op.Source() == asm.SourceX && has(ins.Src)) {
				return fmt.Sprintf("pc %d: arithmetic on the context pointer", pc)
			}
			set(ins.Dst, false)
		case cls == asm.ClassLDX:
			ctx := false
			switch {
			case has(ins.Src):
				if w, ok := reads[ins.Off]; !ok || w != ins.Op.Size().Bytes() {
					return fmt.Sprintf("pc %d: reads the context at %+d, %d bytes, not a readable vtest_ctx field", pc, ins.Off, ins.Op.Size().Bytes())
				}
			case ins.Src == asm.R10:
				m := slotsOf(ins.Off, ins.Op.Size().Bytes())
				ctx = s.slots&m != 0 && ins.Op.Size() == asm.SizeDW && ins.Off%8 == 0
			}
			set(ins.Dst, ctx)
		case cls == asm.ClassST || cls == asm.ClassSTX:
			if has(ins.Dst) {
				return fmt.Sprintf("pc %d: writes through the context pointer", pc)
			}
			spill := cls == asm.ClassSTX && has(ins.Src)
			if spill && (ins.Dst != asm.R10 || ins.Op.Mode() != asm.ModeMEM) {
				return fmt.Sprintf("pc %d: stores the context pointer elsewhere than a stack slot", pc)
			}
			if ins.Dst != asm.R10 {
				if ins.Op.Mode() == asm.ModeAtomic && ins.Imm&asm.AtomicFetch != 0 {
					set(ins.Src, false)
					set(asm.R0, false)
				}
				break
			}
			m := slotsOf(ins.Off, ins.Op.Size().Bytes())
			if ins.Op.Mode() == asm.ModeAtomic {
				// the old value may be the spilled pointer
				if ins.Imm&asm.AtomicFetch != 0 {
					set(ins.Src, s.slots&m != 0)
					set(asm.R0, s.slots&m != 0)
				}
				break
			}
			s.slots &^= m
			if spill {
				s.slots |= m
			}
		case cls == asm.ClassLD:
			set(ins.Dst, false)
			next = pc + 2
		case cls.IsJump():
			op := ins.Op.JumpOp()
			switch {
			case op == asm.JumpCall && ins.Src == asm.PseudoCall:
				flow(pc+1+int(ins.Imm), fitState{regs: s.regs & (1<<asm.R1 | 1<<asm.R2 | 1<<asm.R3 | 1<<asm.R4 | 1<<asm.R5), sub: true})
				for r := asm.R0; r <= asm.R5; r++ {
					set(r, false)
				}
			case op == asm.JumpCall:
				if !printk && helpers.ID(ins.Imm) == helpers.TracePrintk {
					return fmt.Sprintf("pc %d: calls bpf_trace_printk, which needs CAP_PERFMON", pc)
				}
				nargs := 5
				if p := helpers.Lookup(helpers.ID(ins.Imm)); p != nil {
					nargs = p.NumArgs()
				}
				for r := asm.R1; r <= asm.Register(nargs); r++ {
					if has(r) {
						return fmt.Sprintf("pc %d: passes the context pointer to helper %d", pc, ins.Imm)
					}
				}
				for r := asm.R0; r <= asm.R5; r++ {
					set(r, false)
				}
			case op == asm.JumpExit:
				if has(asm.R0) && s.sub {
					return fmt.Sprintf("pc %d: a subprogram returns the context pointer", pc)
				}
				continue
			case op == asm.JumpA:
				off := int(ins.Off)
				if cls == asm.ClassJMP32 {
					off = int(ins.Imm)
				}
				flow(pc+1+off, s)
				continue
			default:
				flow(pc+1+int(ins.Off), s)
			}
		}
		flow(next, s)
	}
	return ""
}

// kernelMaps creates the maps of a corpus in the kernel and returns their
// file descriptors by index; they are closed when the test ends.
func kernelMaps(t *testing.T, ms []*loader.MapSpec) []int {
	fds := make([]int, len(ms))
	for i, m := range ms {
		flags := m.Flags
		if m.Freeze {
			flags |= kernelbpf.MapFlagReadOnlyProg
		}
		fd, err := kernelbpf.MapCreate(uint32(m.Type), m.KeySize, m.ValueSize, m.MaxEntries, flags)
		if err != nil {
			t.Fatalf("map %d (%s): %v", i, m.Name, err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		fds[i] = fd
		if m.Contents != nil {
			if m.Type != verifier.MapTypeArray || m.MaxEntries != 1 || len(m.Contents) != 1 || uint32(len(m.Contents[0].Value)) > m.ValueSize {
				t.Fatalf("map %d (%s): contents %x for a map that is not a one-entry array with room for them", i, m.Name, m.Contents)
			}
			value := make([]byte, m.ValueSize) // the bytes past the contents are zero
			copy(value, m.Contents[0].Value)
			if err := kernelbpf.MapUpdate(fd, make([]byte, 4), value); err != nil {
				t.Fatalf("map %d (%s): %v", i, m.Name, err)
			}
			if err := kernelbpf.MapFreeze(fd); err != nil {
				t.Fatalf("map %d (%s): %v", i, m.Name, err)
			}
		}
	}
	return fds
}

// kernelImage encodes insns for the kernel: every map reference (LD_IMM64
// with src 1 or 2) gets the file descriptor of its map in place of the
// index; an index out of range gets -1, which the kernel refuses as ncclbpf
// refuses the index.
func kernelImage(insns []asm.Instruction, fds []int) []byte {
	out := make([]asm.Instruction, len(insns))
	copy(out, insns)
	for pc := range out {
		ins := out[pc]
		if ins.Op != asm.OpLdImm64 || (ins.Src != asm.PseudoMapFD && ins.Src != asm.PseudoMapValue) {
			continue
		}
		fd := int32(-1)
		if ins.Imm >= 0 && int(ins.Imm) < len(fds) {
			fd = int32(fds[ins.Imm])
		}
		out[pc].Imm = fd
	}
	return asm.Encode(out)
}

// kernelDiffKey names a direction of disagreement.
type kernelDiffKey struct {
	prog        string
	ncclbpfOnly bool // ncclbpf refuses what Linux accepts (else the reverse)
}

// kernelMode is one set of Linux's rules the corpora are compared under.
type kernelMode struct {
	name     string
	progType uint32
	progKind string        // the program type, in words
	reads    map[int16]int // context reads that fit: offset -> width
	printk   bool          // bpf_trace_printk is available
	table    map[kernelDiffKey]kernelDifference
	tableVar string                   // the table's name, for messages
	minFit   int                      // fewer fitting programs fail the test
	run      func(func() error) error // makes the loads under the mode's capabilities
}

// kernelModes: privileged (CAP_BPF, CAP_PERFMON: what a root loader gets)
// with kprobe programs, and CAP_BPF alone (no pointer leaks, no
// uninitialized stack, Spectre v1 checks) with socket filters, whose
// __sk_buff shares only its first two 32-bit readable fields with
// vtest_ctx (len and pkt_type for op and nranks).
var kernelModes = []kernelMode{
	{name: "privileged", progType: kernelbpf.ProgTypeKprobe, progKind: "kprobe program", reads: ctxFitReads, printk: true,
		table: kernelDifferences, tableVar: "kernelDifferences", minFit: 300, run: func(f func() error) error { return f() }},
	{name: "cap_bpf", progType: kernelbpf.ProgTypeSocketFilter, progKind: "socket filter", reads: map[int16]int{0: 4, 4: 4},
		table: kernelDifferencesCapBPF, tableVar: "kernelDifferencesCapBPF", minFit: 200, run: kernelbpf.WithoutPerfmon},
}

// TestKernelVerifierAgrees is the comparison described at the top of this
// file, once per kernelModes entry. It fails on a disagreement the mode's
// table does not explain, on an entry of the table that no longer
// disagrees (the table stays exact), and when fewer programs fit than the
// mode expects (the fit analysis would have gone blind). Mutations it
// catches (each tried by hand): deleting any entry of either table fails
// with that program and both messages; an off-by-one in ncclbpf's
// map-value bounds check (allowing an access to end one byte past the
// value) fails helperargs.s:bad_ringbuf_output_past_value, which Linux
// refuses and the mutated ncclbpf accepts.
//
// It runs only when NCCLBPF_KERNEL_VERIFIER is set (scripts/test-long.sh
// sets "require"): the verdicts depend on the running kernel's version and
// on the host's privileges, which a default test run cannot choose.
func TestKernelVerifierAgrees(t *testing.T) {
	if os.Getenv("NCCLBPF_KERNEL_VERIFIER") == "" {
		t.Skip("the Linux kernel verifier comparison is a long run: NCCLBPF_KERNEL_VERIFIER=require go test ./verifier -run TestKernelVerifierAgrees (root, bpf(2))")
	}
	if err := kernelbpf.Available(); err != nil {
		if os.Getenv("NCCLBPF_KERNEL_VERIFIER") == "require" {
			t.Fatalf("NCCLBPF_KERNEL_VERIFIER=require, but the kernel verifier cannot be used: %v", err)
		}
		t.Skipf("environment limit, Linux verifier unavailable: %v", err)
	}
	corpora := []struct {
		glob string
		maps []*loader.MapSpec
	}{
		{"../testdata/verifier/asm/*.s", asmMaps},
		{"../testdata/verifier/redteam/*.s", redteamAsmMaps},
	}
	var all []kernelProgram
	for _, c := range corpora {
		files, _ := filepath.Glob(c.glob)
		if len(files) == 0 {
			t.Fatalf("no programs in %s", c.glob)
		}
		fds := kernelMaps(t, c.maps)
		for _, f := range files {
			file := filepath.Base(f)
			for _, p := range parseAsmCorpus(t, f) {
				all = append(all, kernelProgram{key: file + ":" + p.name, where: file + ":" + strconv.Itoa(p.line) + ": " + p.name, prog: p, maps: c.maps, fds: fds})
			}
		}
	}
	for _, m := range kernelModes {
		t.Run(m.name, func(t *testing.T) { kernelCompare(t, m, all) })
	}
}

// kernelCompare compares the verdicts on the programs of all that fit m.
func kernelCompare(t *testing.T, m kernelMode, all []kernelProgram) {
	var progs []kernelProgram
	var misfits []string
	for _, kp := range all {
		insns, err := asm.Assemble(kp.prog.src)
		why := ""
		switch {
		case err != nil:
			why = "does not assemble"
		case kp.prog.hook != "vtest":
			why = "hook " + kp.prog.hook
		case kp.prog.maxStack != 0 || kp.prog.maxInsns != 0:
			why = "limits other than the default"
		default:
			why = kernelFit(insns, m.reads, m.printk)
		}
		if why != "" {
			misfits = append(misfits, kp.where+": "+why)
			continue
		}
		kp.insns = insns
		progs = append(progs, kp)
	}

	// Linux's verdicts, all made under the mode's capabilities
	kerrs := make([]error, len(progs))
	start := time.Now()
	err := m.run(func() error {
		for i, kp := range progs {
			fd, err := kernelbpf.ProgLoad(m.progType, kp.prog.name, kernelImage(kp.insns, kp.fds))
			if err == nil {
				unix.Close(fd)
				continue
			}
			var le *kernelbpf.LoadError
			if !errors.As(err, &le) {
				return fmt.Errorf("%s: %w", kp.where, err)
			}
			kerrs[i] = err
		}
		return nil
	})
	switch {
	case errors.Is(err, kernelbpf.ErrCapabilities) && os.Getenv("NCCLBPF_KERNEL_VERIFIER") == "require":
		t.Fatalf("NCCLBPF_KERNEL_VERIFIER=require, but the %s rules cannot be used: %v", m.name, err)
	case errors.Is(err, kernelbpf.ErrCapabilities):
		t.Skipf("environment limit, Linux's %s rules unavailable: %v", m.name, err)
	case err != nil:
		t.Fatal(err)
	}
	linuxTime := time.Since(start)

	var agree, bothAccept, bothReject, wideReturn int
	var unexplained []string
	found := map[kernelDiffKey]bool{}
	start = time.Now()
	for i, kp := range progs {
		cfg := verifier.Config{Hook: kernelHook, Maps: kp.maps}
		_, nerr := cfg.Verify(kp.insns, nil)
		kerr := kerrs[i]
		if strings.HasPrefix(kp.prog.name, "bad_") && nerr == nil {
			wideReturn++ // refused only for vtest's return range (TestCorpusAsm, TestRedteamAsm check that)
		}
		if (nerr == nil) == (kerr == nil) {
			agree++
			if nerr == nil {
				bothAccept++
			} else {
				bothReject++
			}
			continue
		}
		k := kernelDiffKey{kp.key, nerr != nil}
		found[k] = true
		if _, ok := m.table[k]; ok {
			continue
		}
		dir := "Linux refuses, ncclbpf accepts"
		if k.ncclbpfOnly {
			dir = "ncclbpf refuses, Linux accepts"
		}
		nmsg, kmsg := "accepted", "accepted"
		if nerr != nil {
			nmsg = explain(nerr)
		}
		if kerr != nil {
			kmsg = kerr.Error()
		}
		unexplained = append(unexplained, fmt.Sprintf("%s: %s, not in %s\n  ncclbpf: %s\n  Linux:   %s", kp.where, dir, m.tableVar, indent(nmsg), kmsg))
	}
	ncclbpfTime := time.Since(start)
	for _, u := range unexplained {
		t.Error(u)
	}
	var stale []string
	for k, d := range m.table {
		if !found[k] && !d.mayAgree {
			stale = append(stale, k.prog)
		}
	}
	sort.Strings(stale)
	for _, s := range stale {
		t.Errorf("%s lists %s, but the verifiers agree on it (or it no longer fits a %s): remove the entry", m.tableVar, s, m.progKind)
	}
	if len(progs) < m.minFit {
		t.Errorf("only %d corpus programs fit a %s, want at least %d:\n%s", len(progs), m.progKind, m.minFit, strings.Join(misfits, "\n"))
	}
	byCat := map[string][2]int{}
	for k := range found {
		d, ok := m.table[k]
		if !ok {
			continue
		}
		c := byCat[d.category]
		if k.ncclbpfOnly {
			c[0]++
		} else {
			c[1]++
		}
		byCat[d.category] = c
	}
	var cats []string
	for c, n := range byCat {
		cats = append(cats, fmt.Sprintf("  %-32s ncclbpf stricter %2d, Linux stricter %2d", c, n[0], n[1]))
	}
	sort.Strings(cats)
	t.Logf("%s rules: %d corpus programs, %d fit a %s (%d do not); %d agree (%d accepted by both, %d refused by both), %d differ (%d explained); %d bad_ programs pass ncclbpf once any return value is allowed; ncclbpf took %v, Linux %v\n%s",
		m.name, len(all), len(progs), m.progKind, len(misfits), agree, bothAccept, bothReject, len(found), len(found)-len(unexplained), wideReturn,
		ncclbpfTime.Round(time.Millisecond), linuxTime.Round(time.Millisecond), strings.Join(cats, "\n"))
	if testing.Verbose() {
		t.Logf("programs that do not fit:\n%s", strings.Join(misfits, "\n"))
	}
}

// indent indents the continuation lines of a message.
func indent(s string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n           ")
}
