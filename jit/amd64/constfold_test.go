package amd64

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/jit/internal/jittest"
)

// tunables is size_aware's .rodata: size_lo (u64), size_hi (u64), max_ranks
// (u32), then a byte 0xf0 and a halfword 0x8001 for sign extension.
func tunables() []byte {
	b := binary.LittleEndian.AppendUint64(nil, 4<<20)
	b = binary.LittleEndian.AppendUint64(b, 128<<20)
	b = binary.LittleEndian.AppendUint32(b, 8)
	b = append(b, 0xf0, 0, 0x01, 0x80)
	return b // 24 bytes
}

// nativeOf returns the native code after the prologue, Intel syntax.
func nativeOf(x *Executable) string {
	var got []string
	for _, l := range NativeLines(x.Code(), x.PCMap()[0].Start, len(x.Code())) {
		got = append(got, strings.TrimSpace(l[strings.LastIndex(l, "  ")+2:]))
	}
	return strings.Join(got, "; ")
}

// foldCases pin the code of loads from a frozen .rodata: the loads become
// moves of the value; the lddw disappears when nothing else reads its
// register.
var foldCases = []struct {
	name, src, native string
	frozen            bool
}{
	{"size_aware max_ranks", "ldxw %r2, [%r1+36]\nlddw %r3, map_value(0)+16\nldxw %r3, [%r3+0]\nmov32 %r0, 1\njgt32 %r2, %r3, +1\nmov32 %r0, 0\nexit",
		"mov esi, dword ptr [rdi+0x24]; mov edx, 0x8; mov eax, 0x1; xor r9d, r9d; cmp esi, edx; cmovbe rax, r9; xor edx, edx; ret", true},
	{"not frozen: memory load", "lddw %r3, map_value(0)+16\nldxw %r0, [%r3+0]\nexit",
		"mov rdx, ADDR; mov eax, dword ptr [rdx]; xor edx, edx; ret", false},
	{"all widths, one pointer, dead at exit", "lddw %r3, map_value(0)+8\nldxdw %r0, [%r3+0]\nldxw %r4, [%r3+8]\nldxh %r5, [%r3+14]\nldxb %r2, [%r3+12]\nldxsb %r6, [%r3+12]\nldxsh %r7, [%r3+14]\nldxsw %r8, [%r3-4]\nexit",
		"mov eax, 0x8000000; mov ecx, 0x8; mov r8d, 0x8001; mov esi, 0xf0; mov rbx, -0x10; mov r13, -0x7fff; xor r14d, r14d; xor edx, edx; pop r14; pop r13; pop rbx; ret", true},
	{"pointer read later: lddw kept", "lddw %r3, map_value(0)+0\nldxdw %r0, [%r3+0]\nadd %r0, %r3\nexit",
		"mov rdx, ADDR; mov eax, 0x400000; add rax, rdx; xor edx, edx; ret", true},
	{"beyond the value: not folded", "lddw %r3, map_value(0)+16\nldxdw %r0, [%r3+4]\nexit",
		"mov rdx, ADDR; mov rax, qword ptr [rdx+0x4]; xor edx, edx; ret", true},
	{"jump target between: not folded", "lddw %r3, map_value(0)+0\nmov %r4, 0\njeq %r1, 0, +1\nmov %r4, 1\nldxdw %r0, [%r3+0]\nadd %r0, %r4\nexit",
		"mov rdx, ADDR; xor ecx, ecx; mov r9d, 0x1; test rdi, rdi; cmovnz rcx, r9; mov rax, qword ptr [rdx]; add rax, rcx; xor edx, edx; ret", true},
	{"overwritten between: not folded", "lddw %r3, map_value(0)+0\nmov %r3, %r1\nldxdw %r0, [%r3+0]\nexit",
		"mov rdx, ADDR; mov rdx, rdi; mov rax, qword ptr [rdx]; xor edx, edx; ret", true},
}

func TestFoldFrozenLoads(t *testing.T) {
	for _, tc := range foldCases {
		t.Run(tc.name, func(t *testing.T) {
			m := jittest.NewRodata(t, tunables(), 1, tc.frozen)
			x := compileText(t, tc.src, m)
			got := nativeOf(x)
			got = strings.ReplaceAll(got, fmt.Sprintf("%#x", m.ArrayBase), "ADDR")
			for _, off := range []int{4, 8, 16} {
				got = strings.ReplaceAll(got, fmt.Sprintf("%#x", m.ArrayBase+uintptr(off)), "ADDR")
			}
			if got != tc.native {
				t.Errorf("\n got %s\nwant %s", got, tc.native)
			}
		})
	}
}
