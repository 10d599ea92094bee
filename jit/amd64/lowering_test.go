package amd64

import (
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/vm"
)

// loweringCases pin how single eBPF instructions are lowered (the native
// code of pc 0 of "INSN; exit", Intel syntax; branch targets are offsets
// from the entry point). They document the register map and the special
// cases: division through rax/rdx with r11 as divisor, shift counts in cl
// with r4 kept in r11, cmpxchg loops, zero-extension of 32-bit results.
var loweringCases = []struct{ insn, native string }{
	{"add32 %r1, %r2", "add edi, esi"},
	{"add %r0, -1", "add rax, -0x1"},
	{"mov32 %r3, -1", "mov edx, -0x1"},
	{"mov %r3, -1", "mov rdx, -0x1"},
	{"lddw %r6, 0x100000000", "mov rbx, 0x100000000"},
	{"movsx832 %r1, %r2", "movsx edi, sil"},
	{"movsx1664 %r1, %r2", "movsx rdi, si"},
	{"movsx3264 %r0, %r9", "movsxd rax, r15d"},
	{"div %r1, %r2", "mov r11, rsi; test r11, r11; jz 0x23; mov r9, rax; mov rax, rdi; mov r10, rdx; xor edx, edx; div r11; mov rdi, rax; mov rax, r9; mov rdx, r10; jmp 0x25; xor edi, edi"},
	{"sdiv32 %r3, %r0", "mov r11d, eax; test r11d, r11d; jz 0x24; cmp r11d, -0x1; jz 0x28; mov r9, rax; mov rax, rdx; cdq; idiv r11d; mov rdx, rax; mov rax, r9; jmp 0x2a; xor edx, edx; jmp 0x2a; neg edx"},
	{"mod %r0, 0", ""},
	{"smod %r4, -1", "xor ecx, ecx"},
	{"div32 %r5, 7", "mov r11d, 0x7; mov r9, rax; mov rax, r8; mov r10, rdx; xor edx, edx; div r11d; mov r8, rax; mov rax, r9; mov rdx, r10"},
	{"lsh %r1, %r2", "mov r11, rcx; mov rcx, rsi; shl rdi, cl; mov rcx, r11"},
	{"rsh32 %r2, %r4", "shr esi, cl"},
	{"arsh %r4, %r1", "mov r11, rcx; mov rcx, rdi; sar r11, cl; mov rcx, r11"},
	{"lsh32 %r1, 32", "mov edi, edi"},
	{"neg32 %r6", "neg ebx"},
	{"le16 %r1", "movzx edi, di"},
	{"be32 %r2", "bswap esi"},
	{"bswap64 %r3", "bswap rdx"},
	{"le64 %r4", ""},
	{"ldxsb %r1, [%r2+3]", "movsx rdi, byte ptr [rsi+0x3]"},
	{"stxb [%r10-1], %r2", "mov byte ptr [rbp-0x1], sil"},
	{"sth [%r1+2], 7", "mov word ptr [rdi+0x2], 0x7"},
	{"lock add [%r1+8], %r2", "lock add qword ptr [rdi+0x8], rsi"},
	{"lock fetch add32 [%r1+0], %r0", "lock xadd dword ptr [rdi], eax"},
	{"lock fetch and [%r0+0], %r0", "mov r9, rax; mov r10, rax; mov rax, qword ptr [r9]; mov r11, rax; and r11, r10; lock cmpxchg qword ptr [r9], r11; jnz 0xb"},
	{"lock xchg [%r10-8], %r3", "xchg qword ptr [rbp-0x8], rdx"},
	{"lock cmpxchg32 [%r1+4], %r2", "lock cmpxchg dword ptr [rdi+0x4], esi; mov eax, eax"},
	{"jsgt32 %r1, %r2, +0", ""},
	{"jset %r3, 8, +1", "test rdx, 0x8; jnz 0x14"},
	{"jlt %r4, 0, +1", "test rcx, rcx; jb 0x10"},
	{"call %r3", "jmp 0x2c"},
}

func TestLowering(t *testing.T) {
	for _, tc := range loweringCases {
		insns, err := asm.Assemble(tc.insn + "\nexit\nexit")
		if err != nil {
			t.Fatalf("%s: %v", tc.insn, err)
		}
		x, err := Compile(&vm.Program{Name: "lowering", Insns: insns})
		if err != nil {
			t.Fatalf("%s: %v", tc.insn, err)
		}
		m := x.PCMap()
		var got []string
		for _, l := range NativeLines(x.Code(), m[0].Start, m[0].End) {
			got = append(got, strings.TrimSpace(l[strings.LastIndex(l, "  ")+2:]))
		}
		x.Close()
		if g := strings.Join(got, "; "); g != tc.native {
			t.Errorf("%s:\n got %s\nwant %s", tc.insn, g, tc.native)
		}
	}
}

// prologueCases pin the outermost frame (see mainFrame): the code before
// pc 0, and for "whole" cases all the code. Only the callee-saved registers
// a program names are saved, the eBPF stack exists only when r10 is named,
// rsp is 16-byte aligned at helper calls, and only registers that may be
// read before written are zeroed.
var prologueCases = []struct {
	name, src, native string
	whole             bool
}{
	{"constant", "mov %r0, 1\nexit", "mov eax, 0x1; xor edx, edx; ret", true},
	{"context load", "ldxw %r0, [%r1+4]\nexit", "mov eax, dword ptr [rdi+0x4]; xor edx, edx; ret", true},
	{"reads r0 and r3 uninitialised", "add %r0, %r3\nexit", "xor eax, eax; xor edx, edx", false},
	{"written on one path only", "jeq %r1, 0, +1\nmov %r7, 1\nmov %r0, %r7\nexit", "push r13; xor r13d, r13d", false},
	{"r6 kept, no stack", "mov %r6, %r1\nldxdw %r0, [%r6+0]\nexit", "push rbx", false},
	{"stack", "stdw [%r10-8], 1\nldxdw %r0, [%r10-8]\nexit", "push rbp; sub rsp, 0x200; lea rbp, ptr [rsp+0x200]", false},
	{"helper call aligns", "mov %r1, 1\nmov %r2, 2\ncall 2\nexit", "sub rsp, 0x8; xor edx, edx; xor ecx, ecx; xor r8d, r8d", false},
	{"helper call, r6 and stack", "mov %r6, %r1\nstdw [%r10-8], 1\nmov %r1, %r10\ncall 7\nadd %r0, %r6\nexit", "push rbp; push rbx; sub rsp, 0x208; lea rbp, ptr [rsp+0x200]; xor edx, edx; xor ecx, ecx; xor r8d, r8d", false},
	{"callx anchors r12", "mov %r0, 0\nmov %r1, 0\nmov %r3, 0\nmov %r4, 0\nmov %r5, 0\nmov %r2, 2\ncall %r2\nexit", "push r12; mov r12, rsp", false},
	{"local call: full frame", "call local f\nexit\nf:\nmov %r0, 1\nexit", "push rbp; push rbx; push r12; push r13; push r14; push r15; sub rsp, 0x208; mov r12, rsp; lea rbp, ptr [rsp+0x200]; xor eax, eax; xor edx, edx; xor ecx, ecx; xor r8d, r8d; xor ebx, ebx; xor r13d, r13d; xor r14d, r14d; xor r15d, r15d", false},
}

func TestPrologue(t *testing.T) {
	for _, tc := range prologueCases {
		x := compileText(t, tc.src)
		end := x.PCMap()[0].Start
		if tc.whole {
			end = len(x.Code())
		}
		var got []string
		for _, l := range NativeLines(x.Code(), 0, end) {
			got = append(got, strings.TrimSpace(l[strings.LastIndex(l, "  ")+2:]))
		}
		if g := strings.Join(got, "; "); g != tc.native {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, g, tc.native)
		}
	}
}

// branchShapeCases pin the code of pcs [0, upto) of small programs: a jump
// over one ALU instruction becomes a cmov on the opposite condition (the
// instruction computed into r9 first, the 64-bit cmov keeping a 32-bit
// result zero-extended), unless another jump lands on that instruction;
// jeq and jne against 0 reuse the flags of the ALU instruction before them
// when it wrote the register compared, as wide as the comparison; the back
// edge of a loop whose head tests for the exit repeats the test and jumps
// back on the opposite condition past the head.
var branchShapeCases = []struct {
	src    string
	upto   int
	native string
}{
	{"jgt %r5, %r3, +1\nadd %r0, %r5\nexit", 2, "mov r9, rax; add r9, r8; cmp r8, rdx; cmovbe rax, r9"},
	{"jle32 %r1, 31, +1\nmov32 %r1, 31\nmov %r0, %r1\nexit", 2, "mov r9d, 0x1f; cmp edi, 0x1f; cmovnbe rdi, r9"},
	{"jsgt %r1, %r2, +1\nmov %r1, %r2\nmov %r0, %r1\nexit", 2, "cmp rdi, rsi; cmovle rdi, rsi"},
	{"jset %r2, 1, +1\nmov32 %r0, %r2\nexit", 2, "mov r9d, esi; test rsi, 0x1; cmovz rax, r9"},
	{"jeq %r1, 0, +1\nmul32 %r0, 7\nexit", 2, "imul r9d, eax, 0x7; test rdi, rdi; cmovnz rax, r9"},
	{"jlt %r1, %r4, +1\nrsh %r0, 3\nexit", 2, "mov r9, rax; shr r9, 0x3; cmp rdi, rcx; cmovnb rax, r9"},
	{"jne %r1, 0, +1\nneg32 %r0\nexit", 2, "mov r9d, eax; neg r9d; test rdi, rdi; cmovz rax, r9"},
	{"jeq %r1, 0, +1\ndiv %r0, 3\nexit", 1, "test rdi, rdi; jz 0x1c"},
	{"jeq %r1, 0, +1\njgt %r1, 5, +1\nadd %r0, 1\nexit", 2, "test rdi, rdi; jz 0x15; cmp rdi, 0x5; jnbe 0x19"},
	{"sub %r4, 1\njne %r4, 0, +2\nmov %r0, 1\nmov %r0, 2\nexit", 2, "sub rcx, 0x1; jnz 0x18"},
	{"and32 %r1, 8\njeq %r1, 0, +2\nmov %r0, 1\nmov %r0, 2\nexit", 2, "and edi, 0x8; jz 0x15"},
	{"add %r1, 1\njeq32 %r1, 0, +2\nmov %r0, 1\nmov %r0, 2\nexit", 2, "add rdi, 0x1; test edi, edi; jz 0x18"},
	{"add %r1, 1\njeq %r2, 0, +2\nmov %r0, 1\nmov %r0, 2\nexit", 2, "add rdi, 0x1; test rsi, rsi; jz 0x19"},
	{"add %r1, 1\njgt %r1, 0, +2\nmov %r0, 1\nmov %r0, 2\nexit", 2, "add rdi, 0x1; test rdi, rdi; jnbe 0x19"},
	{"jlt %r1, 2, +3\nrsh %r1, 1\nadd %r0, 1\nja -4\nexit", 4, "cmp rdi, 0x2; jb 0x1a; shr rdi, 0x1; add rax, 0x1; cmp rdi, 0x2; jnb 0xc"},
	{"jeq32 %r1, 0, +4\nrsh %r1, 1\nadd %r0, 1\nja -4\nmov %r0, 9\nexit", 4, "test edi, edi; jz 0x20; shr rdi, 0x1; add rax, 0x1; test edi, edi; jnz 0xa; jmp 0x20"},
	{"jlt %r1, 2, +1\nmov %r0, 1\nja -3\nexit", 3, "mov r9d, 0x1; cmp rdi, 0x2; cmovnb rax, r9; jmp 0x0"},
}

func TestBranchShapeLowering(t *testing.T) {
	for _, tc := range branchShapeCases {
		x := compileText(t, tc.src)
		m := x.PCMap()
		var got []string
		for _, l := range NativeLines(x.Code(), m[0].Start, m[tc.upto].Start) {
			got = append(got, strings.TrimSpace(l[strings.LastIndex(l, "  ")+2:]))
		}
		if g := strings.Join(got, "; "); g != tc.native {
			t.Errorf("%q:\n got %s\nwant %s", tc.src, g, tc.native)
		}
	}
}
