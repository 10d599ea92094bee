package asm

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/internal/corpus"
)

func alu(c Class, op ALUOp, s Source) OpCode  { return ALUOpCode(c, op, s) }
func jmp(c Class, op JumpOp, s Source) OpCode { return JumpOpCode(c, op, s) }
func mem(c Class, m Mode, s Size) OpCode      { return MemOpCode(c, m, s) }

// TestTextForms pins, for each instruction form, the text the disassembler
// prints and the slots it assembles to. have is an alternative spelling the
// assembler accepts (empty: the same as text).
func TestTextForms(t *testing.T) {
	lddw := LdImm64(R1, 0x1122334455667788)
	for _, tc := range []struct {
		text string
		have string
		want []Instruction
	}{
		// ALU64 and ALU32, register and immediate sources.
		{text: "add %r1, %r2", want: []Instruction{{Op: alu(ClassALU64, ALUAdd, SourceX), Dst: R1, Src: R2}}},
		{text: "add32 %r1, 5", want: []Instruction{{Op: alu(ClassALU, ALUAdd, SourceK), Dst: R1, Imm: 5}}},
		{text: "sub %r3, -7", want: []Instruction{{Op: alu(ClassALU64, ALUSub, SourceK), Dst: R3, Imm: -7}}},
		{text: "mul32 %r0, %r9", want: []Instruction{{Op: alu(ClassALU, ALUMul, SourceX), Dst: R0, Src: R9}}},
		{text: "div %r0, 0x10000", want: []Instruction{{Op: alu(ClassALU64, ALUDiv, SourceK), Imm: 0x10000}}},
		{text: "sdiv %r0, %r1", want: []Instruction{{Op: alu(ClassALU64, ALUDiv, SourceX), Src: R1, Off: 1}}},
		{text: "sdiv32 %r0, -3", want: []Instruction{{Op: alu(ClassALU, ALUDiv, SourceK), Off: 1, Imm: -3}}},
		{text: "mod32 %r0, 3", want: []Instruction{{Op: alu(ClassALU, ALUMod, SourceK), Imm: 3}}},
		{text: "smod %r0, %r2", want: []Instruction{{Op: alu(ClassALU64, ALUMod, SourceX), Src: R2, Off: 1}}},
		{text: "smod32 %r0, -1", want: []Instruction{{Op: alu(ClassALU, ALUMod, SourceK), Off: 1, Imm: -1}}},
		{text: "or %r1, 0x7fffffff", want: []Instruction{{Op: alu(ClassALU64, ALUOr, SourceK), Dst: R1, Imm: 0x7fffffff}}},
		{text: "and32 %r1, -256", have: "and32 %r1, 0xffffff00", want: []Instruction{{Op: alu(ClassALU, ALUAnd, SourceK), Dst: R1, Imm: -256}}},
		{text: "and %r1, -0x80000000", have: "and %r1, 0x80000000", want: []Instruction{{Op: alu(ClassALU64, ALUAnd, SourceK), Dst: R1, Imm: -1 << 31}}},
		{text: "lsh %r1, 63", want: []Instruction{{Op: alu(ClassALU64, ALULsh, SourceK), Dst: R1, Imm: 63}}},
		{text: "rsh32 %r1, %r2", want: []Instruction{{Op: alu(ClassALU, ALURsh, SourceX), Dst: R1, Src: R2}}},
		{text: "arsh %r4, 1", want: []Instruction{{Op: alu(ClassALU64, ALUArsh, SourceK), Dst: R4, Imm: 1}}},
		{text: "xor32 %r4, %r4", want: []Instruction{{Op: alu(ClassALU, ALUXor, SourceX), Dst: R4, Src: R4}}},
		{text: "mov %r0, -1", have: "mov64 %r0, 0xffffffff", want: []Instruction{{Op: alu(ClassALU64, ALUMov, SourceK), Imm: -1}}},
		{text: "mov32 %r10, %r1", want: []Instruction{{Op: alu(ClassALU, ALUMov, SourceX), Dst: R10, Src: R1}}},
		{text: "neg %r2", want: []Instruction{{Op: alu(ClassALU64, ALUNeg, SourceK), Dst: R2}}},
		{text: "neg32 %r2", want: []Instruction{{Op: alu(ClassALU, ALUNeg, SourceK), Dst: R2}}},
		{text: "movsx832 %r2, %r1", want: []Instruction{{Op: alu(ClassALU, ALUMov, SourceX), Dst: R2, Src: R1, Off: 8}}},
		{text: "movsx1632 %r2, %r1", want: []Instruction{{Op: alu(ClassALU, ALUMov, SourceX), Dst: R2, Src: R1, Off: 16}}},
		{text: "movsx864 %r2, %r1", want: []Instruction{{Op: alu(ClassALU64, ALUMov, SourceX), Dst: R2, Src: R1, Off: 8}}},
		{text: "movsx1664 %r2, %r1", want: []Instruction{{Op: alu(ClassALU64, ALUMov, SourceX), Dst: R2, Src: R1, Off: 16}}},
		{text: "movsx3264 %r2, %r1", want: []Instruction{{Op: alu(ClassALU64, ALUMov, SourceX), Dst: R2, Src: R1, Off: 32}}},
		// Byte order.
		{text: "le16 %r1", want: []Instruction{{Op: alu(ClassALU, ALUEnd, SourceK), Dst: R1, Imm: 16}}},
		{text: "le64 %r1", want: []Instruction{{Op: alu(ClassALU, ALUEnd, SourceK), Dst: R1, Imm: 64}}},
		{text: "be32 %r1", want: []Instruction{{Op: alu(ClassALU, ALUEnd, SourceX), Dst: R1, Imm: 32}}},
		{text: "bswap16 %r1", have: "swap16 %r1", want: []Instruction{{Op: alu(ClassALU64, ALUEnd, SourceK), Dst: R1, Imm: 16}}},
		{text: "bswap64 %r1", want: []Instruction{{Op: alu(ClassALU64, ALUEnd, SourceK), Dst: R1, Imm: 64}}},
		// Loads and stores.
		{text: "ldxb %r0, [%r1]", have: "ldxb r0, [ %r1 + 0 ]", want: []Instruction{{Op: mem(ClassLDX, ModeMEM, SizeB), Src: R1}}},
		{text: "ldxh %r0, [%r1+2]", want: []Instruction{{Op: mem(ClassLDX, ModeMEM, SizeH), Src: R1, Off: 2}}},
		{text: "ldxw %r0, [%r10-4]", want: []Instruction{{Op: mem(ClassLDX, ModeMEM, SizeW), Src: R10, Off: -4}}},
		{text: "ldxdw %r0, [%r1+32767]", have: "ldxdw %r0, [%r1+0x7fff]", want: []Instruction{{Op: mem(ClassLDX, ModeMEM, SizeDW), Src: R1, Off: 32767}}},
		{text: "ldxsb %r0, [%r10-1]", want: []Instruction{{Op: mem(ClassLDX, ModeMEMSX, SizeB), Src: R10, Off: -1}}},
		{text: "ldxsh %r0, [%r10-2]", have: "ldxhsx %r0, [%r10-2]", want: []Instruction{{Op: mem(ClassLDX, ModeMEMSX, SizeH), Src: R10, Off: -2}}},
		{text: "ldxsw %r0, [%r10-32768]", want: []Instruction{{Op: mem(ClassLDX, ModeMEMSX, SizeW), Src: R10, Off: -32768}}},
		{text: "stb [%r10-1], 255", want: []Instruction{{Op: mem(ClassST, ModeMEM, SizeB), Dst: R10, Off: -1, Imm: 255}}},
		{text: "sth [%r10-2], 0x8001", want: []Instruction{{Op: mem(ClassST, ModeMEM, SizeH), Dst: R10, Off: -2, Imm: 0x8001}}},
		{text: "stw [%r1+4], -1", want: []Instruction{{Op: mem(ClassST, ModeMEM, SizeW), Dst: R1, Off: 4, Imm: -1}}},
		{text: "stdw [%r10-8], 171", have: "stdw [%r10-8], 0xab", want: []Instruction{{Op: mem(ClassST, ModeMEM, SizeDW), Dst: R10, Off: -8, Imm: 171}}},
		{text: "stxb [%r10-8], %r1", want: []Instruction{{Op: mem(ClassSTX, ModeMEM, SizeB), Dst: R10, Src: R1, Off: -8}}},
		{text: "stxdw [%r2+16], %r3", want: []Instruction{{Op: mem(ClassSTX, ModeMEM, SizeDW), Dst: R2, Src: R3, Off: 16}}},
		{text: "lddw %r1, 0x1122334455667788", want: lddw[:]},
		{text: "lddw %r0, 0xffffffffffffffff", have: "lddw %r0, -1", want: []Instruction{{Op: OpLdImm64, Imm: -1}, {Imm: -1}}},
		{text: "lddw %r0, 7", want: []Instruction{{Op: OpLdImm64, Imm: 7}, {}}},
		{text: "lddw %r2, map(3)", want: []Instruction{{Op: OpLdImm64, Dst: R2, Src: PseudoMapFD, Imm: 3}, {}}},
		{text: "lddw %r2, map_value(1)+16", want: []Instruction{{Op: OpLdImm64, Dst: R2, Src: PseudoMapValue, Imm: 1}, {Imm: 16}}},
		{text: "ldabsw 12", want: []Instruction{{Op: mem(ClassLD, ModeABS, SizeW), Imm: 12}}},
		{text: "ldindb %r3, 4", want: []Instruction{{Op: mem(ClassLD, ModeIND, SizeB), Src: R3, Imm: 4}}},
		// Atomics.
		{text: "lock add [%r10-8], %r1", want: []Instruction{{Op: mem(ClassSTX, ModeAtomic, SizeDW), Dst: R10, Src: R1, Off: -8, Imm: AtomicAdd}}},
		{text: "lock add32 [%r10-4], %r1", want: []Instruction{{Op: mem(ClassSTX, ModeAtomic, SizeW), Dst: R10, Src: R1, Off: -4, Imm: AtomicAdd}}},
		{text: "lock fetch add [%r10-8], %r1", want: []Instruction{{Op: mem(ClassSTX, ModeAtomic, SizeDW), Dst: R10, Src: R1, Off: -8, Imm: AtomicAdd | AtomicFetch}}},
		{text: "lock or [%r1], %r2", want: []Instruction{{Op: mem(ClassSTX, ModeAtomic, SizeDW), Dst: R1, Src: R2, Imm: AtomicOr}}},
		{text: "lock fetch and32 [%r1], %r2", want: []Instruction{{Op: mem(ClassSTX, ModeAtomic, SizeW), Dst: R1, Src: R2, Imm: AtomicAnd | AtomicFetch}}},
		{text: "lock fetch xor [%r1], %r3", want: []Instruction{{Op: mem(ClassSTX, ModeAtomic, SizeDW), Dst: R1, Src: R3, Imm: AtomicXor | AtomicFetch}}},
		{text: "lock xchg [%r10-8], %r1", have: "lock fetch xchg [%r10-8], %r1", want: []Instruction{{Op: mem(ClassSTX, ModeAtomic, SizeDW), Dst: R10, Src: R1, Off: -8, Imm: AtomicXchg}}},
		{text: "lock cmpxchg32 [%r10-8], %r1", want: []Instruction{{Op: mem(ClassSTX, ModeAtomic, SizeW), Dst: R10, Src: R1, Off: -8, Imm: AtomicCmpXchg}}},
		// Jumps and calls.
		{text: "ja +3", have: "ja 3", want: []Instruction{{Op: OpJa, Off: 3}}},
		{text: "ja -1", want: []Instruction{{Op: OpJa, Off: -1}}},
		{text: "ja32 +100000", have: "gotol +100000", want: []Instruction{{Op: OpJa32, Imm: 100000}}},
		{text: "jeq %r1, 0, +1", want: []Instruction{{Op: jmp(ClassJMP, JumpEq, SourceK), Dst: R1, Off: 1}}},
		{text: "jne %r1, %r2, -2", want: []Instruction{{Op: jmp(ClassJMP, JumpNE, SourceX), Dst: R1, Src: R2, Off: -2}}},
		{text: "jgt32 %r1, -16, +0", have: "jgt32 %r1, 0xfffffff0, +0", want: []Instruction{{Op: jmp(ClassJMP32, JumpGT, SourceK), Dst: R1, Imm: -16}}},
		{text: "jgt32 %r1, 0xfffe0000, +0", want: []Instruction{{Op: jmp(ClassJMP32, JumpGT, SourceK), Dst: R1, Imm: -0x20000}}},
		{text: "jgt %r1, -0x20000, +0", have: "jgt %r1, 0xfffe0000, +0", want: []Instruction{{Op: jmp(ClassJMP, JumpGT, SourceK), Dst: R1, Imm: -0x20000}}},
		{text: "ldxh %r0, [%r1-32768]", have: "ldxh %r0, [%r1+0x8000]", want: []Instruction{{Op: mem(ClassLDX, ModeMEM, SizeH), Src: R1, Off: -32768}}},
		{text: "jge %r1, %r2, +4", want: []Instruction{{Op: jmp(ClassJMP, JumpGE, SourceX), Dst: R1, Src: R2, Off: 4}}},
		{text: "jlt32 %r1, %r2, +4", want: []Instruction{{Op: jmp(ClassJMP32, JumpLT, SourceX), Dst: R1, Src: R2, Off: 4}}},
		{text: "jle %r1, 3, +4", want: []Instruction{{Op: jmp(ClassJMP, JumpLE, SourceK), Dst: R1, Imm: 3, Off: 4}}},
		{text: "jset %r1, 8, +4", want: []Instruction{{Op: jmp(ClassJMP, JumpSet, SourceK), Dst: R1, Imm: 8, Off: 4}}},
		{text: "jsgt %r1, -5, +4", want: []Instruction{{Op: jmp(ClassJMP, JumpSGT, SourceK), Dst: R1, Imm: -5, Off: 4}}},
		{text: "jsge32 %r1, %r2, +4", want: []Instruction{{Op: jmp(ClassJMP32, JumpSGE, SourceX), Dst: R1, Src: R2, Off: 4}}},
		{text: "jslt %r1, %r2, +4", want: []Instruction{{Op: jmp(ClassJMP, JumpSLT, SourceX), Dst: R1, Src: R2, Off: 4}}},
		{text: "jsle32 %r1, 7, -4", want: []Instruction{{Op: jmp(ClassJMP32, JumpSLE, SourceK), Dst: R1, Imm: 7, Off: -4}}},
		{text: "call 5", have: "call helper 5", want: []Instruction{{Op: OpCall, Imm: 5}}},
		{text: "call %r2", want: []Instruction{{Op: OpCallX, Dst: R2}}},
		{text: "call local +9", want: []Instruction{{Op: OpCall, Src: PseudoCall, Imm: 9}}},
		{text: "call local -20", want: []Instruction{{Op: OpCall, Src: PseudoCall, Imm: -20}}},
		{text: "call runtime 7", want: []Instruction{{Op: OpCall, Src: 2, Imm: 7}}},
		{text: "exit", want: []Instruction{{Op: OpExit}}},
		// Raw words for what has no mnemonic.
		{text: ".insn 0x00000000000000ff", want: []Instruction{{Op: 0xff}}},
		{text: ".insn 0x0000000000000195", want: []Instruction{{Op: OpExit, Dst: R1}}},
	} {
		for _, src := range []string{tc.text, tc.have} {
			if src == "" {
				continue
			}
			got, err := Assemble(src)
			if err != nil {
				t.Errorf("Assemble(%q): %v", src, err)
				continue
			}
			if !equal(got, tc.want) {
				t.Errorf("Assemble(%q) =\n\t%+v, want\n\t%+v", src, got, tc.want)
			}
		}
		text, width := FormatAt(tc.want, 0)
		if text != tc.text || width != len(tc.want) {
			t.Errorf("FormatAt(%+v) = %q, %d; want %q, %d", tc.want, text, width, tc.text, len(tc.want))
		}
	}
}

func equal(a, b []Instruction) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestLabels(t *testing.T) {
	src := `
	# comment line
	start:  mov %r0, 0   # trailing comment
	        jeq %r1, 0, done
	        ja32 start
	        call local fn
	        jne %r0, 1, exit
	done:   exit
	fn:
	        lddw %r0, 1
	        ja done
	`
	got, err := Assemble(src)
	if err != nil {
		t.Fatal(err)
	}
	want := []Instruction{
		{Op: alu(ClassALU64, ALUMov, SourceK)},
		{Op: jmp(ClassJMP, JumpEq, SourceK), Dst: R1, Off: 3},
		{Op: OpJa32, Imm: -3},
		{Op: OpCall, Src: PseudoCall, Imm: 2},
		{Op: jmp(ClassJMP, JumpNE, SourceK), Imm: 1, Off: 0}, // implicit "exit" label: the first exit
		{Op: OpExit},
		{Op: OpLdImm64, Imm: 1}, {},
		{Op: OpJa, Off: -4},
	}
	if !equal(got, want) {
		t.Fatalf("got\n%+v\nwant\n%+v", got, want)
	}

	// An explicit "exit" label wins over the implicit one.
	got, err = Assemble("ja exit\nexit\nexit:\nexit")
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Off != 1 {
		t.Errorf("ja exit: offset %d, want 1 (the explicit label)", got[0].Off)
	}
}

func TestAssembleErrors(t *testing.T) {
	for _, tc := range []struct {
		src  string
		line int
		msg  string
	}{
		{"mov %r0, 1\nmovx %r0, 1", 2, `unknown mnemonic "movx"`},
		{"mov %r0", 1, "mov takes 2 operand(s), got 1"},
		{"mov %r16, 1", 1, `want a register %r0-%r10, got "%r16"`},
		{"mov r0, x1", 1, `want a number, got "x1"`},
		{"mov %r0, 0x100000000", 1, "does not fit in 32 bits"},
		{"mov %r0, -2147483649", 1, "does not fit in 32 bits"},
		{"mov %r0, 2147483648", 1, "does not fit in 32 bits"},
		{"ldxw %r0, [%r1+32768]", 1, "offset +32768 does not fit in 16 bits"},
		{"ldxw %r0, %r1", 1, "want a memory operand"},
		{"ldxsdw %r0, [%r1]", 1, "no sign-extending 64-bit load"},
		{"lddw %r0, 0x10000000000000000", 1, "out of 64-bit range"},
		{"\n\nja nowhere\nexit", 3, `undefined label "nowhere"`},
		{"a:\na:\nexit", 2, `label "a" defined twice`},
		{"lock nand [%r1], %r2", 1, `unknown atomic operation "nand"`},
		{"lock add %r1, %r2", 1, "want a memory operand"},
		{"call local", 1, "call takes"},
		{"call far 3", 1, `unknown call mode "far"`},
		{"movsx3232 %r0, %r1", 1, "cannot sign-extend from 32 bits"},
		{"movsx864 %r0, 5", 1, "takes a source register"},
		{"exit %r0", 1, "exit takes 0 operand(s), got 1"},
		{"jeq %r0, 1", 1, "jeq takes 3 operand(s), got 2"},
		{"le24 %r0", 1, `unknown mnemonic "le24"`},
		{"ldxdwsx %r0, [%r1]", 1, `unknown mnemonic "ldxdwsx"`},
		{"mov %r0, 010x", 1, `want a number, got "010x"`},
	} {
		_, err := Assemble(tc.src)
		var ae *AsmError
		if !errors.As(err, &ae) {
			t.Errorf("Assemble(%q) = %v, want an *AsmError", tc.src, err)
			continue
		}
		if ae.Line != tc.line || !strings.Contains(err.Error(), tc.msg) || !strings.Contains(err.Error(), "line "+strconv.Itoa(tc.line)+":") {
			t.Errorf("Assemble(%q) error %q (line %d), want line %d and %q", tc.src, err, ae.Line, tc.line, tc.msg)
		}
	}
	// Several bad lines are all reported.
	_, err := Assemble("foo\nmov %r0, 1\nbar\n")
	if err == nil || !strings.Contains(err.Error(), "line 1:") || !strings.Contains(err.Error(), "line 3:") {
		t.Errorf("two bad lines: error %v, want both lines", err)
	}
}

// Decimal numbers with leading zeros are not octal.
func TestLeadingZeroIsDecimal(t *testing.T) {
	got, err := Assemble("mov %r0, 010")
	if err != nil || got[0].Imm != 10 {
		t.Fatalf("mov %%r0, 010 = %+v, %v; want imm 10", got, err)
	}
}

func TestFormatNonCanonical(t *testing.T) {
	for _, tc := range []struct {
		insns []Instruction
		text  string
		width int
	}{
		{[]Instruction{{Op: OpExit, Imm: 1}}, ".insn 0x0000000100000095", 1},
		{[]Instruction{{Op: alu(ClassALU64, ALUAdd, SourceK), Dst: R1, Src: R2, Imm: 1}}, ".insn 0x0000000100002107", 1},
		{[]Instruction{{Op: 0x00}}, ".insn 0x0000000000000000", 1},
		{[]Instruction{{Op: OpLdImm64, Dst: R1, Imm: 1}}, ".insn 0x0000000100000118", 1},                  // second slot missing
		{[]Instruction{{Op: OpLdImm64, Dst: R1, Imm: 1}, {Op: 1, Imm: 2}}, ".insn 0x0000000100000118", 1}, // second slot not empty
		{[]Instruction{{Op: alu(ClassALU64, ALUEnd, SourceX), Dst: R1, Imm: 16}}, ".insn 0x00000010000001df", 1},
		{[]Instruction{{Op: mem(ClassSTX, ModeAtomic, SizeB), Dst: R1, Src: R2, Imm: AtomicAdd}}, ".insn 0x00000000000021d3", 1},
	} {
		text, width := FormatAt(tc.insns, 0)
		if text != tc.text || width != tc.width {
			t.Errorf("FormatAt(%+v) = %q, %d; want %q, %d", tc.insns, text, width, tc.text, tc.width)
		}
	}
	if text, width := FormatAt(nil, 0); text != "" || width != 0 {
		t.Errorf("FormatAt(nil, 0) = %q, %d", text, width)
	}
}

// Every 64-bit word disassembles to text that assembles back to it.
func TestFormatRoundTripRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	opcodes := make([]OpCode, 0, 256)
	for op := range 256 {
		opcodes = append(opcodes, OpCode(op))
	}
	for i := range 200000 {
		w := r.Uint64()
		if i%2 == 0 { // mostly-valid words: small fields
			op := opcodes[r.IntN(256)]
			w = uint64(op) | uint64(r.IntN(11))<<8 | uint64(r.IntN(11))<<12 |
				uint64(uint16(r.IntN(64)-32))<<16 | uint64(uint32(r.IntN(128)-64))<<32
			if r.IntN(4) == 0 {
				w &^= 0xf000 // src 0
			}
		}
		checkRoundTrip(t, []Instruction{DecodeOne(w), DecodeOne(r.Uint64() & 0xffffffff00000000)})
	}
}

func FuzzFormatRoundTrip(f *testing.F) {
	f.Add(uint64(0x0000000100000095), uint64(0))
	f.Add(uint64(0x5566778800000018), uint64(0x1122334400000000))
	f.Fuzz(func(t *testing.T, a, b uint64) {
		checkRoundTrip(t, []Instruction{DecodeOne(a), DecodeOne(b)})
	})
}

func checkRoundTrip(t *testing.T, insns []Instruction) {
	t.Helper()
	text := Format(insns)
	got, err := Assemble(text)
	if err != nil {
		t.Fatalf("%+v: Format gave %q, which does not assemble: %v", insns, text, err)
	}
	if !equal(got, insns) {
		t.Fatalf("%+v: Format gave %q, which assembles to %+v", insns, text, got)
	}
}

// sections splits a .data file into its "-- NAME" sections.
func sections(text string) map[string]string {
	out := map[string]string{}
	name := ""
	for _, line := range strings.Split(text, "\n") {
		if n, ok := strings.CutPrefix(line, "-- "); ok {
			name = strings.TrimSpace(n)
			continue
		}
		if name != "" {
			out[name] += line + "\n"
		}
	}
	return out
}

// TestCorpusRoundTrip: every corpus program assembles; encode, decode,
// format and assemble again give the same slots; and where a file has a
// "-- raw" section, the assembly gives exactly those words.
func TestCorpusRoundTrip(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(corpus.Dir(t, ".."), "*.data"))
	raws := 0
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		sec := sections(string(b))
		src, ok := sec["asm"]
		if !ok {
			continue
		}
		name := filepath.Base(file)
		insns, err := Assemble(src)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		decoded, err := Decode(Encode(insns))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		text := Format(decoded)
		if strings.Contains(text, ".insn") {
			t.Errorf("%s: disassembly needs raw words:\n%s", name, text)
		}
		again, err := Assemble(text)
		if err != nil {
			t.Errorf("%s: disassembly does not assemble: %v\n%s", name, err, text)
		} else if !equal(again, insns) {
			t.Errorf("%s: round trip differs:\n%s", name, text)
		}
		if raw, ok := sec["raw"]; ok {
			raws++
			var words []uint64
			for _, f := range strings.Fields(raw) {
				w, err := strconv.ParseUint(strings.TrimPrefix(f, "0x"), 16, 64)
				if err != nil {
					t.Fatalf("%s: raw word %q: %v", name, f, err)
				}
				words = append(words, w)
			}
			if len(words) != len(insns) {
				t.Errorf("%s: %d raw words, assembly has %d slots", name, len(words), len(insns))
				continue
			}
			for i, w := range words {
				if insns[i].Word() != w {
					t.Errorf("%s: slot %d assembles to %#016x, raw section says %#016x", name, i, insns[i].Word(), w)
				}
			}
		}
	}
	if raws == 0 {
		t.Error("no corpus file has a -- raw section to cross-check")
	}
}

// Assemble never panics, and what it accepts survives a Format round trip.
func FuzzAssemble(f *testing.F) {
	for _, s := range []string{
		"mov %r0, 1\nexit", "lock fetch add32 [%r10-4], %r1", "call local f\nf: exit", "lddw %r1, map_value(2)+-8",
		"ja32 x\nx:", "ldxw %r0, [%r1 + 0x8]", ".insn 0x95", "jne %r0, -0x80000000, exit\nexit", "a: b: exit",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		insns, err := Assemble(src)
		if err != nil {
			return
		}
		checkRoundTrip(t, insns)
	})
}
