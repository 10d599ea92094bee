package arm64

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/arch/arm64/arm64asm"
)

// The encoders are checked against an independent decoder: each word must
// disassemble (GNU syntax) to the text written from the architecture
// reference.
var encodingCases = []struct {
	word uint32
	want string
}{
	{encRRR(opADD, true, x7, x0, x19), "add x7, x0, x19"},
	{encRRR(opADD, false, x7, x0, x19), "add w7, w0, w19"},
	{encRRR(opSUB, true, x1, x2, x3), "sub x1, x2, x3"},
	{encRRR(opSUB, true, x1, xzr, x3), "neg x1, x3"},
	{encRRR(opSUBS, true, xzr, x2, x9), "cmp x2, x9"},
	{encRRR(opSUBS, false, xzr, x2, x9), "cmp w2, w9"},
	{encRRR(opAND, true, x1, x2, x3), "and x1, x2, x3"},
	{encRRR(opORR, true, x1, xzr, x3), "mov x1, x3"},
	{encRRR(opORR, false, x22, xzr, x22), "mov w22, w22"},
	{encRRR(opORN, true, x9, xzr, x3), "mvn x9, x3"},
	{encRRR(opEOR, false, x4, x4, x9), "eor w4, w4, w9"},
	{encRRR(opANDS, true, xzr, x4, x9), "tst x4, x9"},
	{encRRI12(opADDi, true, x23, sp, 512), "add x23, sp, #0x200"},
	{encRRI12(opADDi, true, x10, sp, 0), "mov x10, sp"},
	{encRRI12(opADDi, true, sp, x24, 0), "mov sp, x24"},
	{encRRI12(opSUBi, true, sp, sp, 512), "sub sp, sp, #0x200"},
	{encRRI12(opSUBi, false, x3, x3, 4095), "sub w3, w3, #0xfff"},
	{encRRI12(opSUBSi, true, xzr, x1, 7), "cmp x1, #0x7"},
	{encMovWide(opMOVZ, true, x9, 0x1234, 2), "mov x9, #0x123400000000"},
	{encMovWide(opMOVZ, false, x9, 0, 0), "mov w9, #0x0"},
	{encMovWide(opMOVN, true, x9, 0, 0), "mov x9, #0xffffffffffffffff"},
	{encMovWide(opMOVK, true, x9, 0xbeef, 3), "movk x9, #0xbeef, lsl #48"},
	{encR4(opMADD, true, x7, x7, x1, xzr), "mul x7, x7, x1"},
	{encR4(opMADD, true, x7, x10, x9, x11), "madd x7, x10, x9, x11"},
	{encCSEL(x7, x7, xzr, condLO), "csel x7, x7, xzr, cc"},
	{encCSEL(x0, x0, x11, condLS), "csel x0, x0, x11, ls"},
	{encCSEL(x22, x22, x3, condGT), "csel x22, x22, x3, gt"},
	{encR4(opMSUB, false, x7, x9, x1, x7), "msub w7, w9, w1, w7"},
	{encRRR(opUDIV, true, x7, x7, x1), "udiv x7, x7, x1"},
	{encRRR(opSDIV, false, x7, x7, x1), "sdiv w7, w7, w1"},
	{encRRR(opLSLV, true, x7, x7, x1), "lsl x7, x7, x1"},
	{encRRR(opLSRV, false, x7, x7, x1), "lsr w7, w7, w1"},
	{encRRR(opASRV, true, x7, x7, x1), "asr x7, x7, x1"},
	{encBitfield(opUBFM, true, x1, x1, 64-3, 63-3), "lsl x1, x1, #3"},
	{encBitfield(opUBFM, false, x1, x1, 5, 31), "lsr w1, w1, #5"},
	{encBitfield(opSBFM, true, x1, x1, 63, 63), "asr x1, x1, #63"},
	{encBitfield(opSBFM, true, x1, x2, 0, 7), "sxtb x1, w2"},
	{encBitfield(opSBFM, false, x1, x2, 0, 15), "sxth w1, w2"},
	{encBitfield(opSBFM, true, x1, x2, 0, 31), "sxtw x1, w2"},
	{encBitfield(opUBFM, false, x1, x1, 0, 15), "uxth w1, w1"},
	{encRR(opREV16w, x1, x1), "rev16 w1, w1"},
	{encRR(opREVw, x1, x1), "rev w1, w1"},
	{encRR(opREVx, x1, x1), "rev x1, x1"},
	{encLdStUimm(0, ldstLoad, x7, x0, 5), "ldrb w7, [x0,#5]"},
	{encLdStUimm(1, ldstLoadSX, x7, x0, 5), "ldrsh x7, [x0,#10]"},
	{encLdStUimm(2, ldstStore, x7, x0, 5), "str w7, [x0,#20]"},
	{encLdStUimm(3, ldstLoad, x7, x23, 1), "ldr x7, [x23,#8]"},
	{encLdStUimm(2, ldstLoadSX, x7, x0, 0), "ldrsw x7, [x0]"},
	{encLdStUnscaled(3, ldstStore, xzr, x23, -8), "stur xzr, [x23,#-8]"},
	{encLdStUnscaled(0, ldstLoadSX, x1, x23, -256), "ldursb x1, [x23,#-256]"},
	{encLdStReg(1, ldstLoad, x1, x2, x9, false), "ldrh w1, [x2,x9]"},
	{encLdStReg(3, ldstLoad, x16, x17, x9, true), "ldr x16, [x17,x9,lsl #3]"},
	{encSTPpre(x29, x30, sp, -16), "stp x29, x30, [sp,#-16]!"},
	{encLDPpost(x19, x20, sp, 16), "ldp x19, x20, [sp],#16"},
	{encB(-8), "b .+0xfffffffffffffff8"},
	{encBL(1 << 20), "bl .+0x100000"},
	{encBcond(condLS, 16), "b.ls .+0x10"},
	{encBcond(condGT, -4), "b.gt .+0xfffffffffffffffc"},
	{encCBZ(true, x0, 8), "cbz x0, .+0x8"},
	{encCBNZ(false, x12, -12), "cbnz w12, .+0xfffffffffffffff4"},
	{encCBNZ(true, x3, -(1 << 20)), "cbnz x3, .+0xfffffffffff00000"},
	{encCBZ(false, x21, 1<<20-4), "cbz w21, .+0xffffc"},
	{encBLR(x16), "blr x16"},
	{insRET, "ret"},
	{insDMBISH, "dmb ish"},
	{insBRK, "brk #0x0"},
	{encLDAXR(true, x10, x9), "ldaxr x10, [x9]"},
	{encLDAXR(false, x10, x9), "ldaxr w10, [x9]"},
	{encSTLXR(true, x12, x11, x9), "stlxr w12, x11, [x9]"},
	{encSTLXR(false, x12, x11, x9), "stlxr w12, w11, [x9]"},
}

// arm64asm does not decode the LSE atomics (FEAT_LSE); binutils' objdump for
// aarch64 (installed with the cross compiler by scripts/setup.sh) checks them.
var lseCases = []struct {
	word uint32
	want string
}{
	{encLSE(lseADD, true, x1, x1, x9), "ldaddal x1, x1, [x9]"},
	{encLSE(lseCLR, false, x9, x10, x9), "ldclral w9, w10, [x9]"},
	{encLSE(lseEOR, true, x2, x10, x9), "ldeoral x2, x10, [x9]"},
	{encLSE(lseSET, false, x2, x2, x9), "ldsetal w2, w2, [x9]"},
	{encLSE(lseSWP, true, x3, x3, x9), "swpal x3, x3, [x9]"},
	{encCASAL(true, x7, x1, x9), "casal x7, x1, [x9]"},
	{encCASAL(false, x7, x1, x9), "casal w7, w1, [x9]"},
}

func TestEncodings(t *testing.T) {
	for _, c := range encodingCases {
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], c.word)
		inst, err := arm64asm.Decode(b[:])
		if err != nil {
			t.Errorf("%#08x (want %q): %v", c.word, c.want, err)
			continue
		}
		if got := arm64asm.GNUSyntax(inst); got != c.want {
			t.Errorf("%#08x = %q, want %q", c.word, got, c.want)
		}
	}
}

func TestEncodingsLSE(t *testing.T) {
	objdump, err := exec.LookPath("aarch64-linux-gnu-objdump")
	if err != nil {
		t.Fatalf("aarch64-linux-gnu-objdump is missing (scripts/setup.sh installs gcc-aarch64-linux-gnu, which brings it): %v", err)
	}
	var code []byte
	for _, c := range lseCases {
		code = binary.LittleEndian.AppendUint32(code, c.word)
	}
	bin := filepath.Join(t.TempDir(), "lse.bin")
	if err := os.WriteFile(bin, code, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(objdump, "-D", "-b", "binary", "-m", "aarch64", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("objdump: %v\n%s", err, out)
	}
	got := map[int]string{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.SplitN(strings.TrimSpace(line), "\t", 3)
		if len(f) != 3 || !strings.HasSuffix(f[0], ":") {
			continue
		}
		off, err := strconv.ParseInt(strings.TrimSuffix(f[0], ":"), 16, 64)
		if err != nil {
			continue
		}
		got[int(off)] = strings.Join(strings.Fields(strings.ReplaceAll(f[2], "\t", " ")), " ")
	}
	for i, c := range lseCases {
		if g := got[4*i]; g != c.want {
			t.Errorf("%#08x = %q, want %q", c.word, g, c.want)
		}
	}
}
