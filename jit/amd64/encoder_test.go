package amd64

import (
	"encoding/hex"
	"strings"
	"testing"

	"golang.org/x/arch/x86/x86asm"
)

// disasm decodes code as 64-bit x86 in Intel syntax, one instruction per line.
func disasm(t *testing.T, code []byte) string {
	t.Helper()
	var lines []string
	for len(code) > 0 {
		inst, err := x86asm.Decode(code, 64)
		if err != nil {
			t.Fatalf("decode % x: %v", code, err)
		}
		lines = append(lines, x86asm.IntelSyntax(inst, 0, nil))
		code = code[inst.Len:]
	}
	return strings.Join(lines, "; ")
}

// encoderCases pins, for each x86 form the JIT emits, both the bytes and
// their disassembly (Intel syntax, as x86asm prints it).
var encoderCases = []struct {
	name string
	emit func(e *enc)
	hex  string
	text string
}{
	{"add r64,r64", func(e *enc) { e.aluRR(opAddMR, true, rax, rdi) }, "4801f8", "add rax, rdi"},
	{"add r64 ext", func(e *enc) { e.aluRR(opAddMR, true, r13, r15) }, "4d01fd", "add r13, r15"},
	{"sub r32,r32", func(e *enc) { e.aluRR(opSubMR, false, rdx, rcx) }, "29ca", "sub edx, ecx"},
	{"or r32 ext", func(e *enc) { e.aluRR(opOrMR, false, r8, rbx) }, "4109d8", "or r8d, ebx"},
	{"and r64", func(e *enc) { e.aluRR(opAndMR, true, rbx, r14) }, "4c21f3", "and rbx, r14"},
	{"xor r32 zero", func(e *enc) { e.aluRR(opXorMR, false, r15, r15) }, "4531ff", "xor r15d, r15d"},
	{"cmp r64", func(e *enc) { e.aluRR(opCmpMR, true, rsi, rdx) }, "4839d6", "cmp rsi, rdx"},
	{"test r32", func(e *enc) { e.aluRR(opTestMR, false, rcx, rcx) }, "85c9", "test ecx, ecx"},
	{"mov r64", func(e *enc) { e.aluRR(opMovMR, true, r12, rsp) }, "4989e4", "mov r12, rsp"},
	{"mov r32 zext", func(e *enc) { e.aluRR(opMovMR, false, rax, rax) }, "89c0", "mov eax, eax"},
	{"add r64,imm8", func(e *enc) { e.aluRI(extAdd, true, rax, 40) }, "4883c028", "add rax, 0x28"},
	{"sub r64,imm32", func(e *enc) { e.aluRI(extSub, true, rsp, 520) }, "4881ec08020000", "sub rsp, 0x208"},
	{"and r32,imm8 neg", func(e *enc) { e.aluRI(extAnd, false, r14, -8) }, "4183e6f8", "and r14d, -0x8"},
	{"xor r64,imm32", func(e *enc) { e.aluRI(extXor, true, rbp, 0x12345) }, "4881f545230100", "xor rbp, 0x12345"},
	{"cmp r32,imm", func(e *enc) { e.aluRI(extCmp, false, rdi, -1) }, "83ffff", "cmp edi, -0x1"},
	{"or r64,imm", func(e *enc) { e.aluRI(extOr, true, r11, 1) }, "4983cb01", "or r11, 0x1"},
	{"test r64,imm32", func(e *enc) { e.testRI(true, rdx, 0x80) }, "48f7c280000000", "test rdx, 0x80"},
	{"test r32,imm32", func(e *enc) { e.testRI(false, r13, 1) }, "41f7c501000000", "test r13d, 0x1"},
	{"mov r32,imm32", func(e *enc) { e.movRI32(r9, 0xdeadbeef) }, "41b9efbeadde", "mov r9d, -0x21524111"},
	{"movabs", func(e *enc) { e.movRI64(rax, 0x1122334455667788) }, "48b88877665544332211", "mov rax, 0x1122334455667788"},
	{"mov r64,simm32", func(e *enc) { e.movRIsx(rbx, -2) }, "48c7c3feffffff", "mov rbx, -0x2"},
	{"loadImm 0", func(e *enc) { e.loadImm(rsi, 0) }, "31f6", "xor esi, esi"},
	{"shl r64,imm", func(e *enc) { e.shiftRI(extShl, true, rcx, 63) }, "48c1e13f", "shl rcx, 0x3f"},
	{"shr r32,imm", func(e *enc) { e.shiftRI(extShr, false, r15, 4) }, "41c1ef04", "shr r15d, 0x4"},
	{"sar r64,cl", func(e *enc) { e.shiftRCL(extSar, true, r11) }, "49d3fb", "sar r11, cl"},
	{"shl r32,cl", func(e *enc) { e.shiftRCL(extShl, false, rdx) }, "d3e2", "shl edx, cl"},
	{"rol r16,8", func(e *enc) { e.rol16RI(rsi, 8) }, "66c1c608", "rol si, 0x8"},
	{"neg r64", func(e *enc) { e.unaryR(extNeg, true, r14) }, "49f7de", "neg r14"},
	{"div r64", func(e *enc) { e.unaryR(extDiv, true, r11) }, "49f7f3", "div r11"},
	{"idiv r32", func(e *enc) { e.unaryR(extIdiv, false, r11) }, "41f7fb", "idiv r11d"},
	{"imul r64,r64", func(e *enc) { e.imulRR(true, rdi, r8) }, "490fafF8", "imul rdi, r8"},
	{"imul r32,r32,imm8", func(e *enc) { e.imulRRI(false, rax, rax, 3) }, "6bc003", "imul eax, eax, 0x3"},
	{"imul r64,r64,imm32", func(e *enc) { e.imulRRI(true, r13, r13, 1000) }, "4d69ede8030000", "imul r13, r13, 0x3e8"},
	{"cmovbe r64", func(e *enc) { e.cmovRR(ccBE, true, r8, rax) }, "4c0f46c0", "cmovbe r8, rax"},
	{"cmovnz r64 ext", func(e *enc) { e.cmovRR(ccNE, true, rax, r9) }, "490f45c1", "cmovnz rax, r9"},
	{"cmovl r64 ext both", func(e *enc) { e.cmovRR(ccL, true, r15, r11) }, "4d0f4cfb", "cmovl r15, r11"},
	{"cmovae r32", func(e *enc) { e.cmovRR(ccAE, false, rdx, rsi) }, "0f43d6", "cmovnb edx, esi"},
	{"bswap r64", func(e *enc) { e.bswapR(true, r8) }, "490fc8", "bswap r8"},
	{"bswap r32", func(e *enc) { e.bswapR(false, rbx) }, "0fcb", "bswap ebx"},
	{"movzx r32,r16", func(e *enc) { e.movzxRR(16, rcx, rcx) }, "0fb7c9", "movzx ecx, cx"},
	{"movzx r32,r8 sil", func(e *enc) { e.movzxRR(8, rax, rsi) }, "400fb6c6", "movzx eax, sil"},
	{"movsx r64,r8", func(e *enc) { e.movsxRR(true, 8, rdx, rdi) }, "480fbed7", "movsx rdx, dil"},
	{"movsx r32,r16", func(e *enc) { e.movsxRR(false, 16, r15, rbx) }, "440fbffb", "movsx r15d, bx"},
	{"movsxd", func(e *enc) { e.movsxRR(true, 32, rax, r14) }, "4963c6", "movsxd rax, r14d"},
	{"load dw", func(e *enc) { e.loadRM(8, rax, rdi, 8) }, "488b4708", "mov rax, qword ptr [rdi+0x8]"},
	{"load w rbp", func(e *enc) { e.loadRM(4, rbx, rbp, -4) }, "8b5dfc", "mov ebx, dword ptr [rbp-0x4]"},
	{"load h r13 disp0", func(e *enc) { e.loadRM(2, rcx, r13, 0) }, "410fb74d00", "movzx ecx, word ptr [r13]"},
	{"load b r12 disp32", func(e *enc) { e.loadRM(1, r8, r12, 0x1000) }, "450fb68424" + "00100000", "movzx r8d, byte ptr [r12+0x1000]"},
	{"load dw rsp", func(e *enc) { e.loadRM(8, r14, rsp, 0) }, "4c8b3424", "mov r14, qword ptr [rsp]"},
	{"loadsx b", func(e *enc) { e.loadsxRM(1, rdx, rsi, 3) }, "480fbe5603", "movsx rdx, byte ptr [rsi+0x3]"},
	{"loadsx h", func(e *enc) { e.loadsxRM(2, r15, rdi, -2) }, "4c0fbf7ffe", "movsx r15, word ptr [rdi-0x2]"},
	{"loadsx w", func(e *enc) { e.loadsxRM(4, rax, rbp, -512) }, "48638500feffff", "movsxd rax, dword ptr [rbp-0x200]"},
	{"store b sil", func(e *enc) { e.storeMR(1, rdi, 1, rsi) }, "40887701", "mov byte ptr [rdi+0x1], sil"},
	{"store h", func(e *enc) { e.storeMR(2, rbp, -2, rax) }, "668945fe", "mov word ptr [rbp-0x2], ax"},
	{"store w ext", func(e *enc) { e.storeMR(4, r14, 4, r15) }, "45897e04", "mov dword ptr [r14+0x4], r15d"},
	{"store dw", func(e *enc) { e.storeMR(8, rbp, -8, rbx) }, "48895df8", "mov qword ptr [rbp-0x8], rbx"},
	{"store imm b", func(e *enc) { e.storeMI(1, rdi, 0, 0x7f) }, "c6077f", "mov byte ptr [rdi], 0x7f"},
	{"store imm h", func(e *enc) { e.storeMI(2, rbp, -6, 0x1234) }, "66c745fa3412", "mov word ptr [rbp-0x6], 0x1234"},
	{"store imm w", func(e *enc) { e.storeMI(4, r13, 8, -1) }, "41c74508ffffffff", "mov dword ptr [r13+0x8], -0x1"},
	{"store imm dw", func(e *enc) { e.storeMI(8, rbp, -16, -1) }, "48c745f0ffffffff", "mov qword ptr [rbp-0x10], -0x1"},
	{"lock add", func(e *enc) { e.lockMR(opAddMR, true, rbp, -8, rdi) }, "f048017df8", "lock add qword ptr [rbp-0x8], rdi"},
	{"lock or 32", func(e *enc) { e.lockMR(opOrMR, false, rdi, 0, r8) }, "f0440907", "lock or dword ptr [rdi], r8d"},
	{"lock xadd", func(e *enc) { e.lockXaddMR(true, rsi, 16, rax) }, "f0480fc14610", "lock xadd qword ptr [rsi+0x10], rax"},
	{"lock cmpxchg 32", func(e *enc) { e.lockCmpxchgMR(false, r9, 4, r11) }, "f0450fb15904", "lock cmpxchg dword ptr [r9+0x4], r11d"},
	{"xchg", func(e *enc) { e.xchgMR(true, rbp, -8, rcx) }, "48874df8", "xchg qword ptr [rbp-0x8], rcx"},
	{"lea", func(e *enc) { e.leaRM(rbp, rsp, 512) }, "488dac2400020000", "lea rbp, ptr [rsp+0x200]"},
	{"lea neg", func(e *enc) { e.leaRM(r11, r12, -3360) }, "4d8d9c24e0f2ffff", "lea r11, ptr [r12-0xd20]"},
	{"lea rip", func(e *enc) { e.leaRIP(r10) }, "4c8d1500000000", "lea r10, ptr [rip]"},
	{"load index8", func(e *enc) { e.loadRMIndex8(r10, r10, r11) }, "4f8b14da", "mov r10, qword ptr [r10+8*r11]"},
	{"load index8 r13 base", func(e *enc) { e.loadRMIndex8(rax, r13, rcx) }, "498b44cd00", "mov rax, qword ptr [r13+8*rcx]"},
	{"jmp rel8", func(e *enc) { e.jmpRel8() }, "eb00", "jmp .+0x0"},
	{"jmp back long", func(e *enc) { e.b = make([]byte, 200); e.jmpBack(0, true, 0); e.b = e.b[200:] }, "e933ffffff", "jmp .-0xcd"},
	{"jl back long", func(e *enc) { e.b = make([]byte, 200); e.jmpBack(ccL, false, 0); e.b = e.b[200:] }, "0f8c32ffffff", "jl .-0xce"},
	{"push/pop", func(e *enc) { e.push(rbp); e.push(r12); e.pop(r15); e.pop(rbx) }, "55415441" + "5f5b", "push rbp; push r12; pop r15; pop rbx"},
	{"cqo/cdq/ret", func(e *enc) { e.cqo(); e.cdq(); e.ret() }, "489999c3", "cqo; cdq; ret"},
	{"call r", func(e *enc) { e.callR(r10); e.callR(rax) }, "41ffd2ffd0", "call r10; call rax"},
	{"call rel32", func(e *enc) { e.callRel32() }, "e800000000", "call .+0x0"},
	{"jmp rel32", func(e *enc) { e.jmpRel32() }, "e900000000", "jmp .+0x0"},
	{"jcc rel32", func(e *enc) { e.jccRel32(ccGE) }, "0f8d00000000", "jnl .+0x0"},
	{"jcc rel8", func(e *enc) { e.jccRel8(ccB) }, "7200", "jb .+0x0"},
	{"jmp back short", func(e *enc) { e.jmpBack(0, true, 0) }, "ebfe", "jmp .-0x2"},
	{"jne back short", func(e *enc) { e.jmpBack(ccNE, false, 0) }, "75fe", "jnz .-0x2"},
}

func TestEncoder(t *testing.T) {
	for _, tc := range encoderCases {
		var e enc
		tc.emit(&e)
		got := hex.EncodeToString(e.b)
		if got != strings.ToLower(tc.hex) {
			t.Errorf("%s: bytes %s, want %s", tc.name, got, strings.ToLower(tc.hex))
		}
		if text := disasm(t, e.b); text != tc.text {
			t.Errorf("%s: disassembly %q, want %q", tc.name, text, tc.text)
		}
	}
}
