package asm

import "testing"

func TestWordRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		ins  Instruction
		word uint64
	}{
		{"mov r0,1", Instruction{Op: ALUOpCode(ClassALU64, ALUMov, SourceK), Dst: R0, Imm: 1}, 0x00000001000000b7},
		{"ldxdw r0,[r1+8]", Instruction{Op: MemOpCode(ClassLDX, ModeMEM, SizeDW), Dst: R0, Src: R1, Off: 8}, 0x0000000000081079},
		{"jne r1,r2,-1", Instruction{Op: JumpOpCode(ClassJMP, JumpNE, SourceX), Dst: R1, Src: R2, Off: -1}, 0x00000000ffff215d},
		{"exit", Instruction{Op: OpExit}, 0x95},
		{"mov r1,-1", Instruction{Op: ALUOpCode(ClassALU64, ALUMov, SourceK), Dst: R1, Imm: -1}, 0xffffffff000001b7},
	} {
		if got := tc.ins.Word(); got != tc.word {
			t.Errorf("%s: Word() = %#016x, want %#016x", tc.name, got, tc.word)
		}
		if got := DecodeOne(tc.word); got != tc.ins {
			t.Errorf("%s: DecodeOne = %+v, want %+v", tc.name, got, tc.ins)
		}
	}
}

func TestDecodeRejectsPartialSlot(t *testing.T) {
	if _, err := Decode(make([]byte, 12)); err == nil {
		t.Fatal("Decode of 12 bytes succeeded, want error")
	}
}

func TestImm64(t *testing.T) {
	pair := LdImm64(R3, 0x1122334455667788)
	insns := []Instruction{pair[0], pair[1], {Op: OpExit}}
	v, ok := Imm64(insns, 0)
	if !ok || v != 0x1122334455667788 {
		t.Fatalf("Imm64 = %#x, %v", v, ok)
	}
	if _, ok := Imm64(insns, 1); ok {
		t.Fatal("Imm64 at second slot succeeded")
	}
	if _, ok := Imm64(insns[:1], 0); ok {
		t.Fatal("Imm64 with missing second slot succeeded")
	}
}
